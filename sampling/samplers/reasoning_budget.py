"""The reasoning budget: end a model's thinking after N tokens, as llama.cpp does.

A port of llama.cpp's `common/reasoning-budget.cpp` (the copy llama-cpp-python
0.3.36 vendors), state for state:

- IDLE: watching for the start tag (`<think>`).
- COUNTING: inside the thinking. An end tag ends it (DONE). Otherwise each token
  spends one of the budget; when none is left the unit forces (FORCING), or, when
  the token's text ends inside a UTF-8 character, waits for one that completes it
  (WAITING_UTF8).
- FORCING: every step keeps only the next forced token (the message's tokens, then
  the first end tag's); after the last, DONE.
- DONE: the thinking is over; a new start tag opens it again with a fresh budget.

Tags are token sequences (the text tokenized with special tokens parsed, as
llama-server tokenizes `reasoning_budget_start_tag` and `reasoning_budget_end_tags`),
matched with llama.cpp's rule: the longest tag that ends at this token among the
tokens since the last match. A budget of 0 forces at once; -1 is no budget.

llama.cpp feeds the generation prompt's tokens to the budget before the reply's,
so a template that opens the thinking in the prompt starts it counting. samplescope
feeds the whole prompt (the history before the reply), which ends in the same state
whenever the prompt before the generation prompt leaves the thinking closed; a raw
prompt that ends in `<think>` starts it counting. The unit learns every token from
the history, so a forced token, a rewind, a branch or a what-if moves it exactly as
the reply did; its state is how many tokens it took, their hash and the machine
after them.

It runs outside the order, with the constraints, before the grammar (llama.cpp
applies it before the grammar and the chain): a forced step's record is cut by
"reasoning_budget" and marked forced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.candidates import Candidates
from sampling.errors import LogitsError, SettingsError
from sampling.samplers.base import Report, UnitBase
from sampling.samplers.reasoning_machine import BudgetMachine, Phase, TokenMatcher, utf8_is_complete
from sampling.samplers.unit import UnitKind, UnitState
from sampling.sections import DEFAULT_TAGS
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import CONSTRAINT, Placement
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.logits import History
    from sampling.samplers.unit import StepContext
    from sampling.settings.record import SamplerSettings
    from sampling.vocabulary import Vocabulary

NO_BUDGET = -1
"""The budget that is off (llama.cpp's -1)."""

MAX_BUDGET = 2**31 - 1
"""The largest budget (llama-server's INT32_MAX)."""


@dataclass(frozen=True, slots=True)
class ReasoningBudgetParams:
    """The reasoning budget's parameters, one field per setting.

    Attributes:
        reasoning_budget: How many tokens the thinking may take; 0 ends it at once,
            -1 is no budget.
        reasoning_budget_message: Text forced before the end tag when the budget runs
            out.
        thinking_tags: The start tag, then the end tags (the first is the one forced);
            none: the model's (`Sampler`), else `<think>` and `</think>`.
        think_set: The thinking's settings, as changes from the answer's
            (`sampling.thinking_settings`; read by the sampler, not by the budget).
    """

    reasoning_budget: int = setting(
        SettingSpec(
            "reasoning_budget",
            "int",
            default=NO_BUDGET,
            off=NO_BUDGET,
            group="reasoning_budget",
            label="budget",
            help="end the thinking after this many tokens (llama.cpp's reasoning budget):"
            " the message and the end tag are forced; 0 ends it at once, -1 is no budget",
            minimum=NO_BUDGET,
            maximum=MAX_BUDGET,
            slider=SliderRange(-1, 4096, hard_min=-1, hard_max=MAX_BUDGET, fine=1, coarse=64),
            summary_key="budget",
        )
    )
    reasoning_budget_message: str = setting(
        SettingSpec(
            "reasoning_budget_message",
            "text",
            default="",
            off="",
            group="reasoning_budget",
            label="message",
            help="text forced before the end tag when the reasoning budget runs out (its"
            " spaces kept)",
            needs="reasoning_budget",
            verbatim=True,
            short_key="budget_message",
        )
    )
    thinking_tags: tuple[str, ...] = setting(
        SettingSpec(
            "thinking_tags",
            "texts",
            default=(),
            group="reasoning_budget",
            label="tags",
            help='the thinking\'s start tag, then its end tags ("<think>,</think>"); none: the'
            " chat template's (else <think>,</think> for the budget); the first end tag is"
            " the one the reasoning budget forces",
        )
    )
    think_set: tuple[str, ...] = setting(
        SettingSpec(
            "think_set",
            "texts",
            default=(),
            group="reasoning_budget",
            label="thinking's",
            help="the thinking's own settings, as changes from the answer's (\"t=0.6,top_k=20,"
            'min_p=0", keys as --set reads them); none: the thinking is sampled as the answer',
        )
    )


@dataclass(frozen=True, slots=True)
class BudgetRules:
    """The budget and its tags as token ids, from the model's vocabulary.

    Attributes:
        budget: The thinking's budget in tokens (no budget: the largest).
        start: The start tag.
        end: The end tags.
        forced: The tokens forced when the budget runs out: the message's, then the
            first end tag's.
        end_text: The first end tag as text (for the status).
    """

    budget: int
    start: TokenMatcher
    end: TokenMatcher
    forced: tuple[int, ...]
    end_text: str

    @classmethod
    def of(cls, params: ReasoningBudgetParams, vocabulary: Vocabulary) -> BudgetRules:
        """The rules of `params`, tokenized as llama-server tokenizes its fields
        (special tokens parsed, nothing added; the message before the first end tag).

        Raises:
            SettingsError: A tag the vocabulary spells in no token.
        """
        start_tag, *end_tags = params.thinking_tags or DEFAULT_TAGS
        start = vocabulary.tokenize(start_tag, special=True)
        ends = [vocabulary.tokenize(tag, special=True) for tag in end_tags]
        if not start or not ends or not ends[0]:
            raise SettingsError(
                "thinking_tags", params.thinking_tags, "tags the model's vocabulary can spell"
            )
        message = vocabulary.tokenize(params.reasoning_budget_message, special=True)
        budget = MAX_BUDGET if params.reasoning_budget < 0 else params.reasoning_budget
        return cls(
            budget,
            TokenMatcher.of([start]),
            TokenMatcher.of(ends),
            (*message, *ends[0]),
            end_tags[0],
        )


@dataclass(frozen=True, slots=True)
class BudgetSnapshot:
    """The reasoning budget unit's state, frozen.

    Attributes:
        params: The settings it ran under (another budget's state is taken again
            from the start).
        taken: How many of the history's tokens the machine took (the prompt's, then
            the reply's).
        digest: Their hash, to tell that a history restored to is the one they were
            (a snapshot a token keeps costs no copy of the history).
        machine: The state after them.
        forced_total: How many tokens the budget forces when it runs out (0 before
            the first step, which spells them).
    """

    params: ReasoningBudgetParams
    taken: int
    digest: int
    machine: BudgetMachine
    forced_total: int = field(default=0, compare=False)

    @property
    def status(self) -> str:
        """The budget as the panel shows it (see `budget_status`)."""
        return budget_status(self.machine, self.params, self.forced_total)


@dataclass(slots=True, eq=False)
class ReasoningBudget(UnitBase):
    """End the thinking after `params.reasoning_budget` tokens (see the module doc).

    Attributes:
        params: The budget, the message and the tags.
        rules: Their token ids, from the vocabulary at the first step.
        taken: The history's tokens the machine took.
        machine: The state after them.
        restored: A snapshot restored and not yet checked against the history.
        forcing: Whether the last step forced a token.
    """

    name: ClassVar[str] = "reasoning_budget"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = CONSTRAINT
    params: ClassVar[type[ReasoningBudgetParams]] = ReasoningBudgetParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(ReasoningBudgetParams)
    group_titles: ClassVar[Mapping[str, str]] = {"reasoning_budget": "reasoning budget (thinking)"}
    label: ClassVar[str] = "budget"
    row_label: ClassVar[str] = "budget"
    draws: ClassVar[bool] = False
    settings: ReasoningBudgetParams
    rules: BudgetRules | None = None
    taken: list[int] = field(default_factory=list)
    machine: BudgetMachine = field(default_factory=BudgetMachine)
    restored: BudgetSnapshot | None = None
    forcing: bool = False

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """On when a budget is set (the tags and the thinking's settings alone leave it
        off)."""
        return settings.of(ReasoningBudgetParams).reasoning_budget != NO_BUDGET

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> ReasoningBudget | None:
        """Built when the budget is on.

        Raises:
            SettingsError: The tags are not a start tag and at least one end tag.
        """
        if not cls.is_on(settings):
            return None
        params = settings.of(ReasoningBudgetParams)
        if len(params.thinking_tags or DEFAULT_TAGS) < 2:
            raise SettingsError(
                "thinking_tags", params.thinking_tags, "a start tag and an end tag: START,END"
            )
        return cls(params)

    def begin(self, step: StepContext) -> None:
        """Nothing to take from the step: the history tells the reply."""
        del step

    def apply(self, candidates: Candidates) -> None:
        """While forcing, keep only the next forced token.

        Raises:
            SettingsError: There is no vocabulary to spell the tags with, or it spells
                a tag in no token.
            LogitsError: An earlier unit banned the token to force.
        """
        rules = self._rules(candidates.vocabulary)
        self._catch_up(candidates.history, rules, candidates.vocabulary)
        machine = self.machine
        self.forcing = False
        if machine.phase is not Phase.FORCING or machine.force_pos >= len(rules.forced):
            return
        forced = rules.forced[machine.force_pos]
        if not 0 <= forced < candidates.logits.shape[0]:
            raise LogitsError(f"the reasoning budget forces token {forced}, beyond the vocabulary")
        if candidates.ids is None:
            allowed = bool(candidates.logits[forced] > -np.inf)
        else:
            allowed = bool(np.any(candidates.ids == forced))
        if not allowed:
            raise LogitsError(
                f"the reasoning budget forces token {forced}, which an earlier unit banned"
            )
        self.forcing = True
        candidates.cut(np.asarray([forced], dtype=np.intp), self.name, prefix=False)

    def _rules(self, vocabulary: Vocabulary | None) -> BudgetRules:
        rules = self.rules
        if rules is None:
            if vocabulary is None:
                raise SettingsError(
                    "reasoning_budget",
                    self.settings.reasoning_budget,
                    "a model's vocabulary to spell the thinking tags with",
                )
            rules = self.rules = BudgetRules.of(self.settings, vocabulary)
        return rules

    def _catch_up(
        self, history: History, rules: BudgetRules, vocabulary: Vocabulary | None
    ) -> None:
        """Feed the machine the history's tokens it has not taken (from the start again
        when the history is not the one it took)."""
        restored = self.restored
        if restored is not None:
            self.restored = None
            prefix = _as_tuple(history[: restored.taken])
            if len(prefix) == restored.taken and hash(prefix) == restored.digest:
                self.taken, self.machine = list(prefix), restored.machine
        taken = self.taken
        # A list's own comparison, no copy of the history a step: as the grammar does.
        if len(history) < len(taken) or _as_list(history[: len(taken)]) != taken:
            taken.clear()
            self.machine = BudgetMachine()
        machine = self.machine
        fresh = _as_list(history[len(taken) :])
        for token in fresh:
            complete = vocabulary is None or utf8_is_complete(vocabulary.token_bytes(token))
            machine = machine.accept(token, complete, rules)
        self.machine = machine
        taken.extend(fresh)

    def accept(self, token: int, prob: float) -> None:
        """Nothing yet: the machine takes the token from the history at the next step
        (the reply may take another token than the one drawn)."""
        del token, prob

    def reset(self) -> None:
        """A new reply: the machine starts afresh (the prompt is fed again)."""
        self.taken = []
        self.machine = BudgetMachine()
        self.restored = None

    @property
    def state(self) -> BudgetSnapshot:
        """How many tokens were taken, their hash, and the machine after them."""
        if self.restored is not None:  # not checked yet: still the one restored
            return self.restored
        forced_total = 0 if self.rules is None else len(self.rules.forced)
        taken = self.taken
        return BudgetSnapshot(
            self.settings, len(taken), hash(tuple(taken)), self.machine, forced_total
        )

    def restore(self, state: UnitState) -> None:
        """Take a state of this budget; start afresh otherwise (the history is then fed
        again at the next step, as if these settings had held from the start)."""
        self.reset()
        if isinstance(state, BudgetSnapshot) and state.params == self.settings:
            self.restored = state

    @property
    def status(self) -> str:
        """The budget as the panel shows it ("budget 40 · 12 left", "forcing
        </think> 2/3")."""
        if self.restored is not None:
            return self.restored.status
        forced_total = 0 if self.rules is None else len(self.rules.forced)
        return budget_status(self.machine, self.settings, forced_total)

    def report(self) -> Report:
        """Where the budget stands after this step's tokens, and whether it forced
        this step's token."""
        return {"status": self.status, "forced": self.forcing}

    @classmethod
    def describe(cls, report: Report, settings: SamplerSettings) -> str:
        """ "reasoning budget: budget 40 · 12 left", "… forcing </think> 2/3 · forced"."""
        del settings
        line = f"reasoning budget: {report.get('status', '')}"
        return line + " · forced" if report.get("forced") else line


def _as_list(tokens: History) -> list[int]:
    """Token ids as a list of ints (a list is taken as it is)."""
    if isinstance(tokens, np.ndarray):
        return [int(token) for token in tokens.tolist()]
    return tokens if isinstance(tokens, list) else list(tokens)


def _as_tuple(tokens: History) -> tuple[int, ...]:
    """Token ids as a tuple of ints (from a list or an array alike)."""
    if isinstance(tokens, np.ndarray):
        return tuple(tokens.tolist())
    return tuple(tokens)


def status_of(units: Iterable[tuple[str, UnitState]]) -> str | None:
    """The reasoning budget's status among a sampler's unit states
    (`SamplerState.units`, `Chain.state`), or None when the budget is off."""
    for name, state in units:
        if name == ReasoningBudget.name and isinstance(state, BudgetSnapshot):
            return state.status
    return None


def budget_status(machine: BudgetMachine, params: ReasoningBudgetParams, forced_total: int) -> str:
    """One line for the panel: the budget, what is left, or what is being forced
    ("budget 40 · 12 left", "forcing </think> 2/12")."""
    budget = params.reasoning_budget
    phase = machine.phase
    if phase is Phase.COUNTING:
        return f"budget {budget} · {machine.remaining} left"
    if phase is Phase.WAITING_UTF8:
        return f"budget {budget} · spent, ending a character"
    if phase is Phase.FORCING:
        tags = params.thinking_tags or DEFAULT_TAGS
        end = tags[1] if len(tags) > 1 else ""
        return f"forcing {end} {machine.force_pos + 1}/{forced_total}"
    if phase is Phase.DONE:
        return f"budget {budget} · thinking ended"
    return f"budget {budget} · not thinking"
