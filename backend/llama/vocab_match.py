"""Whether two loaded models share one vocabulary, token for token.

Comparing two models' distributions (a KL divergence, where two runs fork) pairs
token id i of one with token id i of the other: that holds only when both have the
same number of tokens and every id's bytes are the same (control tokens by their
text). The BOS token and whether a text starts with it must agree too, or the two
would read a text differently.
"""

from __future__ import annotations

from typing import Protocol

from backend.llama.gguf import GgufFile
from backend.llama.pieces import visible_piece
from sampling.errors import SamplescopeError


class VocabularyMismatch(SamplescopeError):
    """Two models' vocabularies differ; the message says where, in one line."""


class Vocabulary(Protocol):
    """What the check reads of a model (a `LlamaRuntime`)."""

    @property
    def n_vocab(self) -> int: ...

    @property
    def bos(self) -> int: ...

    @property
    def add_bos(self) -> bool: ...

    def token_bytes(self, token: int, *, special: bool = False) -> bytes: ...


def check_same_vocabulary(
    first: Vocabulary, second: Vocabulary, names: tuple[str, str] = ("the model", "the base")
) -> None:
    """Raise unless `first` and `second` have the same tokens under the same ids.

    Args:
        first: One model.
        second: The other.
        names: How the message names them.

    Raises:
        VocabularyMismatch: The counts, a token's bytes, the BOS token or the BOS
            rule differ (the first difference is named).
    """
    a, b = names
    if first.n_vocab != second.n_vocab:
        raise VocabularyMismatch(
            f"{a} and {b} have different vocabularies: {first.n_vocab} tokens against"
            f" {second.n_vocab} (a comparison of distributions needs the same tokens)"
        )
    for token in range(first.n_vocab):
        mine = first.token_bytes(token, special=True)
        theirs = second.token_bytes(token, special=True)
        if mine != theirs:
            shown = (visible_piece(p.decode("utf-8", "replace")) for p in (mine, theirs))
            raise VocabularyMismatch(
                f"{a} and {b} have different vocabularies: token {token} is"
                f" {next(shown)!r} in {a} and {next(shown)!r} in {b}"
            )
    if (first.bos, first.add_bos) != (second.bos, second.add_bos):
        raise VocabularyMismatch(
            f"{a} and {b} begin a text differently: BOS {first.bos} (added:"
            f" {first.add_bos}) against {second.bos} (added: {second.add_bos})"
        )


_GGUF_VOCAB_KEYS = (
    "tokenizer.ggml.model",
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.add_bos_token",
)


def check_same_gguf_vocabulary(
    first: GgufFile, second: GgufFile, names: tuple[str, str] = ("the model", "the base")
) -> None:
    """Raise unless two GGUF files hold the same vocabulary (read from their metadata:
    the tokenizer kind, every token's text and type, the BOS rule), without loading
    either model.

    Raises:
        VocabularyMismatch: The first difference, named.
    """
    a, b = names
    mine = [first.metadata.get(key) for key in _GGUF_VOCAB_KEYS]
    theirs = [second.metadata.get(key) for key in _GGUF_VOCAB_KEYS]
    tokens_a, tokens_b = mine[1], theirs[1]
    if isinstance(tokens_a, tuple) and isinstance(tokens_b, tuple):
        if len(tokens_a) != len(tokens_b):
            raise VocabularyMismatch(
                f"{a} and {b} have different vocabularies: {len(tokens_a)} tokens against"
                f" {len(tokens_b)} (a comparison of distributions needs the same tokens)"
            )
        for token, (piece_a, piece_b) in enumerate(zip(tokens_a, tokens_b, strict=True)):
            if piece_a != piece_b:
                raise VocabularyMismatch(
                    f"{a} and {b} have different vocabularies: token {token} is {piece_a!r}"
                    f" in {a} and {piece_b!r} in {b}"
                )
    for key, value_a, value_b in zip(_GGUF_VOCAB_KEYS, mine, theirs, strict=True):
        if value_a != value_b:
            raise VocabularyMismatch(f"{a} and {b} have different vocabularies: {key} differs")
