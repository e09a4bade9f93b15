"""What one sampling step reports: the data the probability panel draws."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sampling.samplers.base import Figure, Report
from sampling.sections import Section
from sampling.settings.record import SamplerSettings

CutBy = str
"""A sampler's name in the record: one of `sampling.settings.registry.CUT_NAMES`."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One of the most probable tokens of a step.

    Attributes:
        token_id: The token's id in the vocabulary.
        logit: The logit after penalties, before temperature.
        prob_before: Softmax of the penalised logits at temperature 1 (no filters).
        prob_after: Its probability in the distribution actually drawn from.
        kept: Whether it survived every filter (and has a nonzero probability).
        removed_by: The sampler that removed it ("" when kept; see
            `sampling.settings.registry.CUT_NAMES`).
    """

    token_id: int
    logit: float
    prob_before: float
    prob_after: float
    kept: bool
    removed_by: str = ""


@dataclass(frozen=True, slots=True)
class CandidateTable:
    """The top-N tokens of a step as read-only arrays, most probable first.

    The rows are the N highest penalised logits (ties by lower id). The kept rows
    need not be a prefix of them: XTC removes the head, typical-p keeps the tokens
    nearest the entropy.

    Attributes:
        token_ids: The rows' token ids.
        logits: Their logits after penalties, DRY and logit bias, before temperature.
        prob_before: Softmax of those logits at temperature 1 (no filters).
        prob_after: Their probability in the distribution drawn from (0 when cut).
        kept: Per row, whether it survived every sampler with a nonzero probability.
        removed_by: Per row, the name of the sampler that removed it ("" when kept;
            "logit_bias" for a ban; see `sampling.settings.registry.CUT_NAMES`).
    """

    token_ids: npt.NDArray[np.intp]
    logits: npt.NDArray[np.float64]
    prob_before: npt.NDArray[np.float64]
    prob_after: npt.NDArray[np.float64]
    kept: npt.NDArray[np.bool_]
    removed_by: tuple[str, ...]


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
        cut_by: The last sampler that removed tokens ("none" when nothing was cut,
            "greedy" at temperature 0; see `sampling.settings.registry.CUT_NAMES`).
        entropy: Entropy in nats of the penalised distribution at temperature 1.
        table: The top-N candidates as arrays (see `candidates`).
        elapsed_us: Time the sampler took for this step, record included, in µs.
        settings: The settings in force for this step.
        temperature: The temperature the draw used: the dynamic one when
            `dynatemp_range` is on, 1.0 when the chain has no "temperature", 0.0
            when greedy.
        tail: The top ranks' probabilities beyond the table, or None when they were
            not recorded.
        notes: What went wrong on this step and was dealt with: each sampler plugin
            switched off for the rest of the reply, naming it and its error.
        logit: The chosen token's logit as the table's rows have theirs (after
            penalties, before temperature), or None when not recorded (a stored step).
        rank: The chosen token's 1-based rank among those logits (ties: lower id
            first), or None when not recorded (a step stored before ranks were).
        reports: What each unit that ran reported of the step, by the unit's name:
            its figures by name (mirostat's "mu", adaptive-p's "target", the
            grammar's "removed" and "forced", guidance's and contrast's two
            distributions' top tokens; `SamplerUnit.report`).
        section: Whether the token belongs to the thinking or the answer
            (`sampling.sections`); the answer for a model that does not think.
        thinking_open: Whether the thinking was open before the token: it was sampled
            with the thinking's settings (`settings` is that record) and the grammar
            waited.
        given: The settings given, when `settings` (the record used) is the
            thinking's record drawn from them; None otherwise (`settings_given`).
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
    temperature: float = 1.0
    tail: RankTail | None = field(default=None, compare=False, repr=False)
    notes: tuple[str, ...] = field(default=(), compare=False)
    logit: float | None = field(default=None, compare=False)
    rank: int | None = field(default=None, compare=False)
    reports: Mapping[str, Report] = field(default_factory=dict, hash=False)
    section: Section = Section.ANSWER
    thinking_open: bool = False
    given: SamplerSettings | None = field(default=None, compare=False, repr=False)

    @property
    def settings_given(self) -> SamplerSettings:
        """The settings given at the step (the answer's, holding the thinking's in
        `think_set`): what the store keeps and a replay runs with."""
        return self.settings if self.given is None else self.given

    def figure(self, unit: str, name: str) -> Figure:
        """The figure `name` the unit `unit` reported of this step (None when it did
        not run or report it)."""
        report = self.reports.get(unit)
        return None if report is None else report.get(name)

    @property
    def forced(self) -> bool:
        """Whether a unit left exactly one token to take (it reported "forced")."""
        return any(report.get("forced") is True for report in self.reports.values())

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
                kept=bool(table.kept[i]),
                removed_by=table.removed_by[i],
            )
            for i in range(table.token_ids.shape[0])
        )

    @property
    def prob_unfiltered(self) -> float | None:
        """The chosen token's probability at temperature 1 before any filter (the
        distribution `entropy` measures); None when neither its logit nor a table row
        records it."""
        table = self.table
        if self.logit is not None and table.token_ids.shape[0]:
            return float(table.prob_before[0] * np.exp(self.logit - table.logits[0]))
        rows = np.flatnonzero(table.token_ids == self.token_id)
        return float(table.prob_before[rows[0]]) if rows.size else None

    @property
    def rank_known(self) -> int | None:
        """The chosen token's 1-based rank by raw probability: the recorded one, else
        its row in the table (the table's rows are the top ranks in order); None for a
        stored step without a rank whose token is below the table."""
        if self.rank is not None:
            return self.rank
        rows = np.flatnonzero(self.table.token_ids == self.token_id)
        return int(rows[0]) + 1 if rows.size else None
