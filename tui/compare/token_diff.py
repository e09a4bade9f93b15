"""A compare column's tokens against the reference column's, span by span.

`difflib.SequenceMatcher` over token ids: each token of the column is the same as a
reference token (in an equal run), replaces reference tokens, or is inserted; the
reference tokens a column leaves out are deletions, marked where they would stand.
A reply that returns to the reference's wording after a detour shows as a replaced
or inserted span and then the same tokens again, which the first divergence alone
cannot say.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from typing import Literal

TokenChange = Literal["same", "replaced", "inserted"]


@dataclass(frozen=True, slots=True)
class TokenDiff:
    """How a column's tokens differ from the reference's.

    Attributes:
        changes: Per token of the column: "same", "replaced" or "inserted".
        deleted_before: Column token index → how many reference tokens are left out
            just before it (the column's length: left out at its end).
        replaced: Tokens of the column in replaced spans.
        inserted: Tokens of the column in inserted spans.
        deleted: Reference tokens the column leaves out (replaced spans' surplus not
            counted).
    """

    changes: tuple[TokenChange, ...]
    deleted_before: dict[int, int]
    replaced: int
    inserted: int
    deleted: int

    @property
    def same(self) -> bool:
        """Whether the two are the same tokens."""
        return not (self.replaced or self.inserted or self.deleted)

    def summary(self) -> str:
        """E.g. "3 replaced · 2 inserted · 1 deleted" (the parts that are not zero)."""
        parts = [
            f"{count} {name}"
            for count, name in (
                (self.replaced, "replaced"),
                (self.inserted, "inserted"),
                (self.deleted, "deleted"),
            )
            if count
        ]
        return " · ".join(parts)


def token_diff(reference: Sequence[int], tokens: Sequence[int]) -> TokenDiff:
    """Diff `tokens` against `reference` (token ids), without the junk heuristic: a
    frequent token (a space, a comma) is matched like any other."""
    matcher = SequenceMatcher(None, list(reference), list(tokens), autojunk=False)
    changes: list[TokenChange] = []
    deleted_before: dict[int, int] = {}
    replaced = inserted = deleted = 0
    for tag, ref_start, ref_end, start, end in matcher.get_opcodes():
        if tag == "equal":
            changes += ["same"] * (end - start)
        elif tag == "replace":
            changes += ["replaced"] * (end - start)
            replaced += end - start
        elif tag == "insert":
            changes += ["inserted"] * (end - start)
            inserted += end - start
        else:  # "delete"
            deleted_before[start] = deleted_before.get(start, 0) + ref_end - ref_start
            deleted += ref_end - ref_start
    return TokenDiff(tuple(changes), deleted_before, replaced, inserted, deleted)


DIFF_EVERY = 0.5
"""Seconds between two diffs of a column while the columns run."""


class LiveDiff:
    """A column's diff against the reference, kept up to date as tokens arrive.

    While one of the two runs, only their common length is compared (the rest is not
    known to differ yet) and nothing counts as left out at the end; the diff is then
    computed at most every `DIFF_EVERY` seconds (it is quadratic in the worst case:
    not on every frame of a long reply). Once both ended it is computed at once.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.diff: TokenDiff | None = None
        """The last diff computed (None: none yet)."""
        self._clock = clock
        self._key: tuple[int, int, bool] | None = None
        self._at = -math.inf

    def reset(self) -> None:
        """Forget the diff (the columns run again)."""
        self.diff = None
        self._key = None
        self._at = -math.inf

    def due(self, n_reference: int, n_tokens: int, ended: bool) -> bool:
        """Whether the diff is out of date for these lengths and may be computed now
        (while a column runs only the shared length is diffed: once one column stops
        growing, the other's new tokens change nothing)."""
        if self._key_for(n_reference, n_tokens, ended) == self._key:
            return False
        return ended or self._clock() - self._at >= DIFF_EVERY

    @staticmethod
    def _key_for(n_reference: int, n_tokens: int, ended: bool) -> tuple[int, int, bool]:
        """What the diff depends on: both lengths at the end, the shared one before."""
        if ended:
            return (n_reference, n_tokens, True)
        shared = min(n_reference, n_tokens)
        return (shared, shared, False)

    def update(self, reference: Sequence[int], tokens: Sequence[int], ended: bool) -> None:
        """Diff `tokens` against `reference` if `due`; `ended`: both columns ended."""
        if not self.due(len(reference), len(tokens), ended):
            return
        self._key = self._key_for(len(reference), len(tokens), ended)
        self._at = self._clock()
        if not ended:
            shared = min(len(reference), len(tokens))
            reference, tokens = reference[:shared], tokens[:shared]
        diff = token_diff(reference, tokens)
        end = len(tokens)
        if not ended and end in diff.deleted_before:
            rest = {at: n for at, n in diff.deleted_before.items() if at != end}
            dropped = diff.deleted_before[end]
            diff = replace(diff, deleted_before=rest, deleted=diff.deleted - dropped)
        self.diff = diff
