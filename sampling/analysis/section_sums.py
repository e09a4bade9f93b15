"""A per-token figure summed by section: the thinking's total and the answer's.

`samplescope score` sums each section's log-probabilities, `kld` its divergences and its
agreements on the top token; each figure of a section is its total over its count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from sampling.sections import Section


@dataclass(frozen=True, slots=True)
class SectionSum:
    """One section's sum of a figure.

    Attributes:
        kind: The section.
        count: How many of its tokens have the figure.
        total: The figure summed over them (0.0 for none).
    """

    kind: Section
    count: int
    total: float

    @property
    def mean(self) -> float | None:
        """The figure per token (None for no token)."""
        return self.total / self.count if self.count else None


def section_sums(
    kinds: Iterable[Section], values: Iterable[float | None]
) -> tuple[SectionSum, SectionSum]:
    """The thinking's sum of `values` and the answer's (a None value is left out).

    Raises:
        ValueError: `kinds` and `values` differ in length.
    """
    parts: dict[Section, list[float]] = {Section.THINKING: [], Section.ANSWER: []}
    for kind, value in zip(kinds, values, strict=True):
        if value is not None:
            parts[kind].append(float(value))
    return (
        SectionSum(
            Section.THINKING, len(parts[Section.THINKING]), math.fsum(parts[Section.THINKING])
        ),
        SectionSum(Section.ANSWER, len(parts[Section.ANSWER]), math.fsum(parts[Section.ANSWER])),
    )
