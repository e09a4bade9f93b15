"""The columns of a comparison: their events, and where two replies part."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from backend.chat.events import GenerationEvent


@dataclass(frozen=True, slots=True)
class ColumnEvent:
    """An event of one column's generation.

    Attributes:
        column: The index of the column (a chat reply is column 0).
        event: The generation event.
    """

    column: int
    event: GenerationEvent


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens two sequences share."""
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        shared += 1
    return shared


def first_divergence(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The index of the first token where two replies differ, or None if they are equal.

    When one reply is a prefix of the other, they diverge where the shorter one ends.
    """
    shared = common_prefix(a, b)
    return None if shared == len(a) == len(b) else shared
