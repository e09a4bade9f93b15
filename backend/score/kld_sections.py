"""`kld`'s figures by section: the mean KL divergence and the top-token agreement of the
thinking's scored tokens and of the answer's, for a text with thinking tags
(`backend.score.text_sections`). A scored position belongs to the section of the token
it predicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from backend.score.kld import KldResult
from sampling.analysis.section_sums import section_sums
from sampling.sections import Section


@dataclass(frozen=True, slots=True)
class SectionDivergence:
    """One section's figures.

    Attributes:
        kind: The section.
        n_scored: Its scored tokens.
        mean_kld: Their mean KL(base ‖ test), nats (None for none scored).
        same_top: The share of them where both models' top token is the same (None for
            none scored).
    """

    kind: Section
    n_scored: int
    mean_kld: float | None
    same_top: float | None


def divergence_by_section(
    result: KldResult, sections: Sequence[Section]
) -> tuple[SectionDivergence, ...]:
    """The thinking's figures, then the answer's; none when `sections` is empty (the
    text does not think).

    Args:
        result: The run.
        sections: The section of every token of `result.plan.tokens`.
    """
    if not sections:
        return ()
    kinds = [sections[int(position)] for position in result.positions]
    divergence = result.divergence
    same = (divergence.top_test == divergence.top_base).astype(np.float64)
    klds = section_sums(kinds, divergence.kld.tolist())
    agreements = section_sums(kinds, same.tolist())
    return tuple(
        SectionDivergence(kld.kind, kld.count, kld.mean, agreement.mean)
        for kld, agreement in zip(klds, agreements, strict=True)
    )
