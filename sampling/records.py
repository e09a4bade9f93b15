"""What one sampling step reports: the data the probability panel draws."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from sampling.settings import SamplerSettings

CutBy = Literal["none", "greedy", "top_k", "top_p", "min_p"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One of the most probable tokens of a step.

    Attributes:
        token_id: The token's id in the vocabulary.
        logit: The logit after penalties, before temperature.
        prob_before: Softmax of the penalised logits at temperature 1 (no filters).
        prob_after: Its probability in the distribution actually drawn from.
        kept: Whether it survived every filter.
    """

    token_id: int
    logit: float
    prob_before: float
    prob_after: float
    kept: bool


@dataclass(frozen=True, slots=True)
class CandidateTable:
    """The top-N tokens of a step as read-only arrays, most probable first.

    `kept` is implied: every filter keeps a prefix of this order, so the first
    `n_kept` rows are kept (all of them when n_kept >= N).
    """

    token_ids: npt.NDArray[np.intp]
    logits: npt.NDArray[np.float64]
    prob_before: npt.NDArray[np.float64]
    prob_after: npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class RankTail:
    """A step's probabilities by rank, deeper than its table (for the tail plot).

    Recorded only while something asks for it (`Sampler.tail_ranks`): two float32
    arrays of `ranks` values, 8 bytes a rank (2 KB a token at 256 ranks).

    Attributes:
        prob_before: Softmax of the penalised logits at temperature 1, most probable
            first.
        prob_after: The same tokens' probability in the distribution drawn from
            (0 for a token a filter cut).
    """

    prob_before: npt.NDArray[np.float32]
    prob_after: npt.NDArray[np.float32]

    @property
    def ranks(self) -> int:
        """How many ranks are recorded."""
        return int(self.prob_before.shape[0])


@dataclass(frozen=True, slots=True)
class Step:
    """The immutable record of one sampled token.

    Attributes:
        token_id: The chosen token.
        prob: Its probability in the distribution drawn from.
        draw: The uniform in [0, 1) the draw used; None when none was drawn
            (greedy, or a Gumbel draw, which uses one uniform per kept token).
        n_kept: How many tokens survived the filters.
        cut_by: The last filter that removed tokens ("none" when nothing was cut,
            "greedy" at temperature 0).
        entropy: Entropy in nats of the penalised distribution at temperature 1.
        table: The top-N candidates as arrays (see `candidates`).
        elapsed_us: Time the sampler took for this step, record included, in µs.
        settings: The settings in force for this step.
        tail: The top ranks' probabilities beyond the table, or None when they were
            not recorded.
    """

    token_id: int
    prob: float
    draw: float | None
    n_kept: int
    cut_by: CutBy
    entropy: float
    table: CandidateTable = field(compare=False, repr=False)
    elapsed_us: float = field(compare=False)
    settings: SamplerSettings
    tail: RankTail | None = field(default=None, compare=False, repr=False)

    @property
    def candidates(self) -> tuple[Candidate, ...]:
        """The top-N tokens by penalised logit, most probable first."""
        table = self.table
        return tuple(
            Candidate(
                token_id=int(table.token_ids[i]),
                logit=float(table.logits[i]),
                prob_before=float(table.prob_before[i]),
                prob_after=float(table.prob_after[i]),
                kept=i < self.n_kept,
            )
            for i in range(table.token_ids.shape[0])
        )
