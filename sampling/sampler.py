"""The sampler: one generator, live settings, one immutable record per token."""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from sampling.analysis.token_scores import token_rank
from sampling.candidates import Candidates
from sampling.chain import Chain, build_chain
from sampling.kept import Kept
from sampling.logits import FloatArray, History, checked_logits
from sampling.ordering import token_at_mass
from sampling.plugins import PluginFailure
from sampling.records import Step
from sampling.rng import UniformSource, make_source
from sampling.samplers.base import Figure, Report
from sampling.samplers.unit import StepContext, UnitState
from sampling.sections import Section, SectionSnapshot, SectionTracker, SectionWatch, speller
from sampling.settings.record import SamplerSettings
from sampling.table import candidate_table
from sampling.thinking_settings import tags_in_force, thinking_record
from sampling.vocabulary import Vocabulary
from sampling.weights import Float64Array
from sampling.workspace import Workspace

DEFAULT_CANDIDATES = 20

FrozenReports = tuple[tuple[str, tuple[tuple[str, Figure], ...]], ...]
"""A step's reports as an immutable value (a `SamplerState` is one)."""

_NO_REPORTS: Mapping[str, Report] = {}
"""A step's reports when no unit of its chain reports (shared: never written to)."""


@dataclass(frozen=True, slots=True)
class SamplerState:
    """Everything a `Sampler` carries from one token to the next, frozen.

    `Sampler.restore` puts it back: sampling on from there gives exactly the tokens
    (and records) that sampling on from the moment it was taken gave.

    Attributes:
        settings: The settings in force.
        sources: Each generator started so far, by kind, with its position.
        units: Each unit's state, by name (units without state left out).
        switched_off: Each sampler plugin switched off for the reply, with why.
        resumed: A resumed reply's length and the recorded step's reports the next
            step hands the units (`Sampler.resume`), or None.
        sections: Where the reply's sections stand (None: no thinking tags in force).
    """

    settings: SamplerSettings
    sources: tuple[tuple[str, int, Hashable], ...]
    units: tuple[tuple[str, UnitState], ...]
    switched_off: tuple[tuple[str, str], ...] = ()
    resumed: tuple[int, FrozenReports] | None = None
    sections: SectionSnapshot | None = None


def probabilities(
    logits: object,
    settings: SamplerSettings,
    history: History = (),
    *,
    vocabulary: Vocabulary | None = None,
    states: Iterable[tuple[str, UnitState]] | Mapping[str, UnitState] = (),
    recorded: Mapping[str, Report] | None = None,
    generated: int = 0,
    end_of_generation: Sequence[int] = (),
    second: FloatArray | None = None,
    small: FloatArray | None = None,
    thinking: bool = False,
    answer_start: int | None = None,
) -> Float64Array:
    """The exact distribution a draw uses: float64 over the whole vocabulary.

    Cut tokens have probability 0.0; the rest sum to 1. XTC applies as on a step
    whose coin says so (as with `xtc_probability` 1).

    Args:
        logits: One score per vocabulary token (never modified).
        settings: The settings.
        history: Token ids so far, for the penalties and DRY.
        vocabulary: The model's token texts, for DRY's sequence breakers (without
            it no token breaks a repeat).
        states: Each unit's state by its name (`Sampler.state().units`, or a
            mapping): the units named start from it, the others afresh.
        recorded: A recorded step's reports (`Step.reports`): each unit takes back
            the state that step ran with (mirostat's mu, adaptive-p's target).
        generated: How many tokens the reply has so far (min_tokens).
        end_of_generation: The tokens min_tokens bans (else the vocabulary's).
        second: The step's second distribution (a negative prompt's logits: guidance).
        small: A smaller model's logits at the step (contrast).
        thinking: The thinking is open before the step (the grammar waits).
        answer_start: Where in the history the answer began (the grammar's start).

    Raises:
        LogitsError: The logits or the history cannot be sampled from.
    """
    candidates = Candidates(*checked_logits(logits), history, Workspace(), vocabulary)
    chain = build_chain(settings)
    given = states.items() if isinstance(states, Mapping) else states
    chain.restore(given)
    context = StepContext(
        None,
        generated,
        tuple(end_of_generation),
        recorded or {},
        second,
        small,
        thinking,
        answer_start,
    )
    chain.begin(context, every=True)
    kept = chain.run(candidates)
    if kept.ids is None:
        return kept.probs
    result = np.zeros(candidates.logits.shape[0], dtype=np.float64)
    result[kept.ids] = kept.probs
    return result


class Sampler:
    """Chooses tokens from logits and reports why.

    One sampler owns one random generator. `settings` may be replaced between
    tokens (live sliders) without touching the random stream; `reset()` re-seeds
    it from `settings.seed` and starts every unit's state afresh.

    A unit hears the token the sequence takes at the end of the next `sample`'s
    history (a token forced instead of the one drawn is what it sees).

    Args:
        settings: The sampler's settings.
        vocab_size: When given, logits of another length are an error.
        n_candidates: How many top tokens each step's record lists.
        vocabulary: The model's token texts, for DRY's sequence breakers (and its
            `eog_ids`, which min_tokens bans).
        end_of_generation: The tokens min_tokens bans, instead of the vocabulary's.
        thinking_tags: The model's thinking tags (its chat template's: start, then
            ends), which settings that name none take.

    Sections: when tags are in force (the settings' `thinking_tags`, else the
    model's, else `<think>` and `</think>` while a reasoning budget is on), each step
    records its section, learnt from the history with the vocabulary's bytes (the
    prompt's first: `sampling.sections.SectionWatch`). While the thinking is open
    before a step, the step is sampled with the thinking's record (`think_set`,
    `sampling.thinking_settings`) and the grammar waits; it applies from the token
    after the one that closes the thinking. Without tags none of this runs.
    """

    def __init__(
        self,
        settings: SamplerSettings,
        *,
        vocab_size: int | None = None,
        n_candidates: int = DEFAULT_CANDIDATES,
        vocabulary: Vocabulary | None = None,
        end_of_generation: Sequence[int] = (),
        thinking_tags: Sequence[str] = (),
    ) -> None:
        if not isinstance(settings, SamplerSettings):
            raise TypeError(f"settings must be SamplerSettings, not {type(settings).__name__}")
        self.vocabulary = vocabulary
        self.model_tags = tuple(thinking_tags)
        self._watch: SectionWatch | None = None
        self._given = settings
        self._settings = settings
        self._thinking: SamplerSettings | None = None
        self._take(settings)
        self.vocab_size = vocab_size
        self.n_candidates = n_candidates
        self.tail_ranks = 0
        """How many top ranks each step also records as a `RankTail` (0: none).

        The tail plot sets it while shown: deeper ranks cost a partial sort per
        token, which a hidden plot should not make every token pay."""
        self._ends = tuple(end_of_generation)
        self._resumed: tuple[int, FrozenReports] | None = None
        self._switched_off: dict[str, str] = {}
        self._notes: list[str] = []
        self._record = self._settings
        self._chain: Chain = self._build(self._settings, None)
        self._sources: dict[str, tuple[int, UniformSource]] = {}
        self._workspace = Workspace()

    @property
    def settings(self) -> SamplerSettings:
        """The settings given (the answer's, with the thinking's in `think_set`);
        assigning keeps the random stream going."""
        return self._given

    @settings.setter
    def settings(self, settings: SamplerSettings) -> None:
        if not isinstance(settings, SamplerSettings):
            raise TypeError(f"settings must be SamplerSettings, not {type(settings).__name__}")
        if settings is self._given:
            return
        self._take(settings)
        # Each unit keeps its state (mirostat's mu) across the change.
        self._use(self._watch is not None and self._watch.thinking, force=True)

    def _take(self, settings: SamplerSettings) -> None:
        """Take new settings: the tags in force, the thinking's record, the watch.

        Raises:
            SettingsError: The tags are not a start and an end tag, or `think_set`
                cannot be read.
        """
        filled, tags = tags_in_force(settings, self.model_tags)
        self._thinking = thinking_record(filled)
        watch, vocabulary = self._watch, self.vocabulary
        if not tags or vocabulary is None:
            self._watch = None
        else:
            tracker = SectionTracker.of(tags[0], tags[1:])
            if watch is None or watch.tracker != tracker:
                self._watch = SectionWatch(tracker, speller(vocabulary))
        self._given, self._settings = settings, filled

    def _use(self, thinking: bool, force: bool = False) -> SamplerSettings:
        """Build the chain of the section's record when it is not the one running."""
        record = self._thinking if thinking and self._thinking is not None else self._settings
        if force or record is not self._record:
            self._chain = self._build(record, self._chain)
            self._record = record
        return record

    @property
    def answer_start(self) -> int | None:
        """Where in the history the answer began after the last thinking (None: no
        tags in force)."""
        return None if self._watch is None else self._watch.now.answer_start

    @property
    def thinking_open(self) -> bool:
        """Whether the thinking is open after the history the last step saw."""
        return self._watch is not None and self._watch.thinking

    def section_of(self, token: int) -> Section:
        """The section `token` would have at the step just sampled (a token forced in
        place of the one drawn)."""
        return Section.ANSWER if self._watch is None else self._watch.section_of(token)

    @property
    def switched_off(self) -> dict[str, str]:
        """Each sampler plugin switched off for this reply, with the message saying why."""
        return dict(self._switched_off)

    def _build(self, settings: SamplerSettings, previous: Chain | None) -> Chain:
        """The chain for `settings`, leaving out the plugins switched off (and any
        whose building fails, which is switched off too)."""
        while True:
            try:
                chain = build_chain(settings, previous=previous, leave_out=self._switched_off)
            except PluginFailure as failure:
                self._note(failure)
                continue
            return chain

    def _note(self, failure: PluginFailure) -> None:
        """Switch a failed plugin off for the reply, keeping its message for the step."""
        self._switched_off[failure.name] = str(failure)
        self._notes.append(str(failure))

    def resume(self, generated: int, recorded: Mapping[str, Report] | None = None) -> None:
        """Continue a reply at its step `generated` (a what-if, a branch): the next
        step hands both to every unit held (`StepContext`).

        Args:
            generated: How many tokens the reply has: min_tokens counts from there.
            recorded: The reports of the recorded step the next one redoes
                (`Step.reports`): each unit runs with the state it reported
                (mirostat's mu, adaptive-p's target) instead of its own.
        """
        frozen = (
            ()
            if recorded is None
            else tuple((name, tuple(report.items())) for name, report in recorded.items())
        )
        self._resumed = (generated, frozen)

    @property
    def chain(self) -> Chain:
        """The units each step runs, built from the settings in force."""
        return self._chain

    def reset(self) -> None:
        """Re-seed the generator from `settings.seed`; restart every unit's state and
        switch the plugins switched off on again (a new reply)."""
        self._sources.clear()
        self._resumed = None
        if self._watch is not None:
            self._watch.reset()
        if self._switched_off or self._record is not self._settings:
            self._switched_off.clear()
            self._record = self._settings
            self._chain = self._build(self._settings, None)
        try:
            self._chain.reset()
        except PluginFailure as failure:
            self._note(failure)
            self._chain = self._chain.without(failure.name)

    def state(self) -> SamplerState:
        """A frozen snapshot of the settings, the generators' positions and the units'
        states (what `restore` puts back, e.g. to rewind a reply)."""
        sources = tuple(
            (kind, seed, source.position) for kind, (seed, source) in self._sources.items()
        )
        return SamplerState(
            self._given,
            sources,
            self._chain.state,
            tuple(self._switched_off.items()),
            self._resumed,
            None if self._watch is None else self._watch.now,
        )

    def restore(self, state: SamplerState) -> None:
        """Go back to a snapshot `state` gave: the next token is the one that followed it."""
        self._take(state.settings)
        self._switched_off = dict(state.switched_off)
        self._resumed = state.resumed
        watch = self._watch
        if watch is not None:
            watch.restore(state.sections or SectionSnapshot())
        self._record = self._thinking if self.thinking_open and self._thinking else self._settings
        self._chain = self._build(self._record, None)
        self._chain.restore(state.units)
        self._sources.clear()
        for kind, seed, position in state.sources:
            source = make_source(kind, seed)
            source.seek(position)
            self._sources[kind] = (seed, source)

    def _source(self) -> UniformSource:
        kind = self._settings.rng
        started = self._sources.get(kind)
        if started is None:
            started = (self._settings.seed, make_source(kind, self._settings.seed))
            self._sources[kind] = started
        return started[1]

    def sample(
        self,
        logits: object,
        history: History = (),
        *,
        uniform: float | None = None,
        second: FloatArray | None = None,
        small: FloatArray | None = None,
    ) -> Step:
        """Choose the next token.

        Args:
            logits: One score per vocabulary token (never modified).
            history: Token ids so far, prompt included; the penalties see the last
                `repeat_last_n` of them.
            uniform: Draw with this uniform in [0, 1) instead of the generator's next
                one (what-if: a past step's randomness under other settings). A
                Gumbel draw, which needs one variate per token, ignores it.
            second: The step's second distribution: the negative prompt's logits,
                which guidance combines with `logits` (None: none).
            small: A smaller model's logits at the step, which contrast subtracts.

        Returns:
            The step's record.

        Raises:
            LogitsError: The logits or the history cannot be sampled from.
        """
        started = time.perf_counter_ns()
        settings = self._settings
        checked = checked_logits(logits, self.vocab_size)
        watch = self._watch
        thinking = False
        if watch is not None:
            watch.catch_up(history)
            thinking = watch.thinking
            settings = self._use(thinking)
        if self._chain.drawing or self._resumed is not None:
            self._begin(second, small, thinking)
        while True:  # a plugin that fails is switched off and the step run again
            chain = self._chain
            candidates = Candidates(*checked, history, self._workspace, self.vocabulary)
            try:
                kept = chain.run(candidates)
                reports = chain.reports() if chain.reporting else _NO_REPORTS
                break
            except PluginFailure as failure:
                self._note(failure)
                self._chain = chain.without(failure.name)
        penalized = candidates.logits
        maximum = candidates.maximum
        draw: float | None = None
        if chain.greedy:
            assert kept.ids is not None
            token_id, prob = int(kept.ids[0]), 1.0
        elif settings.draw == "gumbel":
            token_id, prob = self._gumbel(kept)
        elif settings.rng == "xorshift128":
            draw = self._source().uniform() if uniform is None else uniform
            token_id, prob = _roulette_in_id_order(kept, draw)
        else:
            draw = self._source().uniform() if uniform is None else uniform
            token_id, prob = _inverse_cdf(
                kept, penalized, maximum, candidates.temperature, draw, self._workspace
            )
        if chain.accepting and not chain.greedy:
            try:
                chain.accept(token_id, prob)
            except PluginFailure as failure:
                self._note(failure)
                self._chain = chain.without(failure.name)
        shown = kept
        if candidates.before is not None:  # a ban or smoothing came after: show before it
            penalized, maximum = candidates.before
            if candidates.bans:  # the banned rows stand among the kept ones
                shown = replace(kept, prefix=False, ranked=None)
        table, entropy, tail = candidate_table(
            penalized, maximum, shown, self.n_candidates, self._workspace, self.tail_ranks
        )
        return Step(
            token_id=token_id,
            prob=prob,
            draw=draw,
            n_kept=kept.n_kept,
            cut_by=kept.cut_by,
            entropy=entropy,
            table=table,
            elapsed_us=(time.perf_counter_ns() - started) / 1000.0,
            settings=settings,
            # Greedy: the temperature as set (below GREEDY_TEMPERATURE), as recorded always.
            temperature=_set_temperature(settings) if chain.greedy else kept.temperature,
            tail=tail,
            notes=self._take_notes(),
            logit=float(penalized[token_id]),
            rank=token_rank(penalized, token_id, table.token_ids),
            reports=reports,
            section=Section.ANSWER if watch is None else watch.section_of(token_id),
            thinking_open=thinking,
            given=None if settings is self._settings else self._settings,
        )

    def _begin(
        self, second: FloatArray | None, small: FloatArray | None, thinking: bool = False
    ) -> None:
        """Hand the step's context to the units that hear it: the generator, the second
        distributions (guidance's, contrast's), whether the thinking is open and where
        the answer began (the grammar's), and a resumed reply's length and a recorded
        step's reports (to every unit held)."""
        resumed = self._resumed
        source = self._source() if self._chain.drawing else None
        answer_start = self.answer_start
        if resumed is None:
            step = StepContext(
                source,
                None,
                self._ends,
                second=second,
                small=small,
                thinking=thinking,
                answer_start=answer_start,
            )
        else:
            recorded = {name: dict(figures) for name, figures in resumed[1]}
            step = StepContext(
                source, resumed[0], self._ends, recorded, second, small, thinking, answer_start
            )
        self._resumed = None
        try:
            self._chain.begin(step, every=resumed is not None)
        except PluginFailure as failure:
            self._note(failure)
            self._chain = self._chain.without(failure.name)

    def _take_notes(self) -> tuple[str, ...]:
        """The messages since the last step (none, nearly always)."""
        if not self._notes:
            return ()
        notes = tuple(self._notes)
        self._notes.clear()
        return notes

    def _gumbel(self, kept: Kept) -> tuple[int, float]:
        """Gumbel-max over the kept tokens, with noise from the seeded generator.

        argmax(log p_i + G_i) with G_i = -log E_i (E_i standard exponential) is
        argmin(E_i / p_i): the same draw without two logarithms per token.
        """
        size = kept.probs.shape[0]
        exponentials = self._workspace.array("exponentials", size, np.float64)
        self._source().exponentials(exponentials)
        # A zero or denormal probability gives inf: that token is never the argmin.
        with np.errstate(divide="ignore", over="ignore"):
            np.divide(exponentials, kept.probs, out=exponentials)
        position = int(np.argmin(exponentials))
        token_id = position if kept.ids is None else int(kept.ids[position])
        return token_id, float(kept.probs[position])


def _set_temperature(settings: SamplerSettings) -> float:
    """The temperature the settings set (what a greedy step records)."""
    value = settings.value("temperature")
    return float(value) if isinstance(value, int | float) else 0.0


def _inverse_cdf(
    kept: Kept,
    penalized: FloatArray,
    maximum: float,
    temperature: float,
    uniform: float,
    workspace: Workspace,
) -> tuple[int, float]:
    """The first token, in descending order, whose cumulative mass exceeds u."""
    if kept.ids is not None:
        cumulative = np.cumsum(kept.probs)
        target = uniform * float(cumulative[-1])
        position = min(int(np.searchsorted(cumulative, target, side="right")), kept.n_kept - 1)
        return int(kept.ids[position]), float(kept.probs[position])
    token_id = token_at_mass(
        penalized, maximum, temperature, kept.probs, uniform * float(kept.probs.sum()), workspace
    )
    return token_id, float(kept.probs[token_id])


def _roulette_in_id_order(kept: Kept, uniform: float) -> tuple[int, float]:
    """run.c's roulette: walk the kept tokens in token-id order."""
    if kept.ids is None:
        ids = None
        probs = kept.probs
    else:
        order = np.argsort(kept.ids)
        ids = kept.ids[order]
        probs = kept.probs[order]
    cumulative = np.cumsum(probs)
    target = uniform * float(cumulative[-1])
    position = int(np.searchsorted(cumulative, target, side="right"))
    if position >= probs.shape[0]:
        position = int(np.flatnonzero(probs)[-1])  # u * total rounded past the end
    token_id = position if ids is None else int(ids[position])
    return token_id, float(probs[position])
