"""A fake token constraint for the grammar unit's tests: a fixed sequence of allowed sets.

`SequenceConstraint(allowed)` allows `allowed[i]` after i tokens (every token once
past the end), as a grammar would after i tokens; `Words` is a vocabulary that hands
one out (`sampling.constraint.ConstraintSource`), and `give_word_grammar` makes the
fake model one, reading a one-rule GBNF of whole words.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence

import numpy as np

from sampling.constraint import BoolArray, GrammarSpec
from sampling.errors import GrammarDeadEnd
from sampling.ordering import IdArray


class SequenceConstraint:
    """Allows `allowed[i]` after i tokens; counts what it is asked (for the tests)."""

    def __init__(self, allowed: Sequence[frozenset[int]], n_vocab: int) -> None:
        self.allowed_sets = tuple(allowed)
        self.n_vocab = n_vocab
        self.taken: list[int] = []
        self.resets = 0

    def _now(self) -> frozenset[int] | None:
        index = len(self.taken)
        return self.allowed_sets[index] if index < len(self.allowed_sets) else None

    def allowed(self, ids: IdArray | None) -> BoolArray:
        asked = np.arange(self.n_vocab) if ids is None else np.asarray(ids)
        now = self._now()
        if now is None:
            return np.ones(asked.shape[0], dtype=bool)
        return np.isin(asked, np.fromiter(now, dtype=np.intp, count=len(now)))

    def accept(self, token: int) -> None:
        now = self._now()
        if now is not None and token not in now:
            raise GrammarDeadEnd(f"token {token} breaks the grammar")
        self.taken.append(token)

    def reset(self) -> None:
        self.taken = []
        self.resets += 1

    def snapshot(self) -> Hashable:
        return tuple(self.taken)

    def restore(self, snapshot: Hashable) -> None:
        assert isinstance(snapshot, tuple)
        self.taken = list(snapshot)


class Words:
    """A vocabulary of `n_vocab` tokens that builds `SequenceConstraint`s."""

    def __init__(self, n_vocab: int, allowed: Sequence[frozenset[int]]) -> None:
        self.n_vocab = n_vocab
        self.allowed = allowed
        self.built: list[SequenceConstraint] = []
        self.specs: list[GrammarSpec] = []

    def token_bytes(self, token: int, *, special: bool = False) -> bytes:
        return f"w{token}".encode()

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        return []

    def token_constraint(self, spec: GrammarSpec) -> SequenceConstraint:
        self.specs.append(spec)
        constraint = SequenceConstraint(self.allowed, self.n_vocab)
        self.built.append(constraint)
        return constraint


_GROUP = re.compile(r'\(([^)]*)\)|"([^"]*)"')
_LITERAL = re.compile(r'"([^"]*)"')


def word_grammar(gbnf: str, words: Sequence[str], end: int) -> list[frozenset[int]]:
    """The allowed sets of a one-rule GBNF over whole words, for the fake model.

    `root ::= " the" (" cat" | " dog") " sat"` allows " the", then " cat" or " dog",
    then " sat", then only `end` (the end of the reply).
    """
    rule = gbnf.split("::=", 1)[1]
    ids = {word: token for token, word in enumerate(words)}
    steps = []
    for group in _GROUP.finditer(rule):
        literals = (
            _LITERAL.findall(group.group(1)) if group.group(1) is not None else [group.group(2)]
        )
        steps.append(frozenset(ids[literal] for literal in literals))
    return [*steps, frozenset({end})]


def give_word_grammar(model: object, words: Sequence[str], end: int) -> None:
    """Make a fake model a `ConstraintSource` of `word_grammar`s."""

    def token_constraint(spec: GrammarSpec) -> SequenceConstraint:
        return SequenceConstraint(word_grammar(spec.gbnf, words, end), len(words))

    model.token_constraint = token_constraint  # type: ignore[attr-defined]
