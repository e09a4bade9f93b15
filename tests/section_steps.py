"""Hand-built steps of a thinking model's reply, with raw probabilities chosen exactly,
for the figures by section."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sampling.records import CandidateTable, Step
from sampling.sections import Section
from sampling.settings.record import SamplerSettings

T, A = Section.THINKING, Section.ANSWER


def step_of(
    token_id: int,
    raw_prob: float,
    section: Section = Section.ANSWER,
    *,
    prob: float | None = None,
    entropy: float = 1.0,
    rank: int = 1,
) -> Step:
    """A step that drew `token_id`, whose raw probability is exactly `raw_prob` (its
    table's one row), in `section`; `prob` (default `raw_prob`) in the distribution
    drawn from."""
    table = CandidateTable(
        token_ids=np.array([token_id], np.intp),
        logits=np.zeros(1),
        prob_before=np.array([raw_prob]),
        prob_after=np.array([raw_prob if prob is None else prob]),
        kept=np.ones(1, np.bool_),
        removed_by=("",),
    )
    return Step(
        token_id=token_id,
        prob=raw_prob if prob is None else prob,
        draw=None,
        n_kept=1,
        cut_by="none",
        entropy=entropy,
        table=table,
        elapsed_us=0.0,
        settings=SamplerSettings(),
        logit=0.0,
        rank=rank,
        section=section,
    )


def steps_of(
    tokens: Sequence[int], raw_probs: Sequence[float], sections: Sequence[Section]
) -> list[Step]:
    """One step per token, with its raw probability and section."""
    return [
        step_of(token, p, kind) for token, p, kind in zip(tokens, raw_probs, sections, strict=True)
    ]
