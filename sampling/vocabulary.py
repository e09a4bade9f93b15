"""What DRY needs from a model: its token texts, to find the sequence breakers' tokens.

A breaker is text ("\\n", ":"); DRY works on token ids. As llama.cpp does
(`get_overlapping_token_sequences` in src/llama-sampling.cpp), every token whose text
contains a breaker is a breaker head on its own, and every token whose text ends with
the start of a breaker is a head followed by the tokens of the breaker's rest. The
model's backend hands the sampler a `Vocabulary`; the heads are found once per
vocabulary and set of breakers.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Protocol

BreakerHeads = Mapping[int, tuple[tuple[int, ...], ...]]
"""Head token id → the tails (token ids) that complete a breaker after it; () alone
(an empty tail) when the head's own text holds a whole breaker."""

_MAX_BREAKER_BYTES = 40
_MAX_TAIL_TOKENS = 20


class Vocabulary(Protocol):
    """A model's tokens as text (the backend's runtime is one)."""

    @property
    def n_vocab(self) -> int:
        """How many tokens the vocabulary holds."""
        ...

    def token_bytes(self, token: int, *, special: bool = False) -> bytes:
        """One token's text as bytes (`special`: control tokens by their text)."""
        ...

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        """Token ids of `text`, no BOS added."""
        ...


_CACHE: weakref.WeakKeyDictionary[object, dict[tuple[str, ...], BreakerHeads]] = (
    weakref.WeakKeyDictionary()
)


def breaker_heads(vocabulary: Vocabulary, breakers: tuple[str, ...]) -> BreakerHeads:
    """The breakers' head tokens and tails for one vocabulary (cached while it lives)."""
    try:
        per_vocabulary = _CACHE.setdefault(vocabulary, {})
    except TypeError:  # not weakly referenceable: compute every time
        per_vocabulary = {}
    heads = per_vocabulary.get(breakers)
    if heads is None:
        heads = per_vocabulary[breakers] = _find_heads(vocabulary, breakers)
    return heads


def _find_heads(vocabulary: Vocabulary, breakers: tuple[str, ...]) -> BreakerHeads:
    words = [vocabulary.token_bytes(token, special=True) for token in range(vocabulary.n_vocab)]
    heads: dict[int, list[tuple[int, ...]]] = {}
    for breaker in breakers:
        text = breaker.encode("utf-8")[:_MAX_BREAKER_BYTES]
        if not text:
            continue
        first = text[:1]
        for token, word in enumerate(words):
            if text in word:
                _add(heads, token, ())
                continue
            position = word.find(first)
            while position >= 0:
                matched = len(word) - position  # the word's tail is a prefix of the breaker
                if word[position:] == text[:matched]:
                    rest = text[matched:].decode("utf-8", "replace")
                    tail = tuple(vocabulary.tokenize(rest, special=False)[:_MAX_TAIL_TOKENS])
                    _add(heads, token, tail)
                position = word.find(first, position + 1)
    return {token: tuple(tails) for token, tails in heads.items()}


def _add(heads: dict[int, list[tuple[int, ...]]], token: int, tail: tuple[int, ...]) -> None:
    tails = heads.setdefault(token, [])
    if tail not in tails:
        tails.append(tail)
