"""The interface every sampler unit has, and what it declares about itself.

Units come in two kinds, and a chain keeps them in this order:

- "logits" units rewrite the whole vocabulary's logits before anything reads
  their order (the penalties, DRY, the logit bias).
- "candidates" units read the order. A filter keeps a shorter subset of it and
  names itself as the cut; the temperature sets the temperature the later units
  and the final distribution read the logits at.

A unit declares where it runs (`placement`, `sampling.settings.placement`) and when it is on
(`is_on`); the order a settings record stores and the chain that runs are both
derived from those two. A unit is built from the settings (`from_settings`) whenever
they change, and a unit the settings turn off is not built at all. Every step, a
unit that reads the step's context (the generator it draws from, the reply's length
when a step continues it elsewhere, the end-of-generation tokens, a recorded step's reports)
hears it first (`begin`); the units of the chain then `apply` in order; after the
draw each of them hears the token drawn (`accept`). A unit placed last may reshape
the distribution the chain ends with (`Reshaping`).
A unit keeps its own state (mirostat's mu): `state` is a snapshot of it, which
`restore` puts back, and `reset` starts it afresh. When the settings change, each
new unit is handed the state of the unit of its name that ran before (`restore`),
and takes what of it still holds.

After the chain ran, each unit that ran may report figures of the step by name
(`report`): the step's record keeps them under its name, and the probability panel
shows them in the unit's words (`describe`). A unit whose state follows from the
draws it heard says so (`keeps_state`): beam search refuses it. The on-rule, the
summary's parts and the panel's line follow from a unit's declarations (`UnitBase`,
`sampling.samplers.base`) unless it writes its own.

Units without state derive from `Stateless`, which answers all of that for them.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from sampling.samplers.base import Report, SummaryStyle, UnitBase
from sampling.settings.placement import IN_ORDER, Placement
from sampling.settings.spec import SettingSpec

if TYPE_CHECKING:
    from sampling.candidates import Candidates
    from sampling.kept import Kept
    from sampling.logits import FloatArray
    from sampling.rng import UniformSource
    from sampling.settings.record import SamplerSettings

UnitKind = Literal["logits", "candidates"]

UnitState = Hashable | None
"""A snapshot of a unit's state: an immutable value (None for a unit without state)."""


@dataclass(frozen=True, slots=True)
class StepContext:
    """What a step tells the units before any of them applies (`begin`).

    Attributes:
        source: The sampler's generator, to draw from (None: no draw this step, as
            for `probabilities`; XTC then applies).
        resumed_at: How many tokens the reply has when the step continues it
            elsewhere (a what-if, a branch, a beam: `Sampler.resume`); None when the
            step follows the last one.
        end_of_generation: The tokens a ban of the reply's end bans (empty: the
            vocabulary's own).
        recorded: When the step redoes a recorded one (a what-if of it): that
            step's reports, by unit name, from which a unit takes back the state it
            ran with (mirostat's mu, adaptive-p's target); empty otherwise.
        second: A second distribution's logits for this step (a negative prompt's,
            decoded beside the reply: guidance), or None.
        small: A smaller model's logits for this step (decoding the same text in
            step: contrast), or None.
        thinking: Whether the thinking is open before the step (`sampling.sections`):
            the grammar waits for the answer.
        answer_start: Where in the history the answer began after the last thinking
            closed (the grammar's start), or None when no thinking tags are in force.
    """

    source: UniformSource | None = None
    resumed_at: int | None = None
    end_of_generation: tuple[int, ...] = ()
    recorded: Mapping[str, Report] = field(default_factory=dict)
    second: FloatArray | None = None
    small: FloatArray | None = None
    thinking: bool = False
    answer_start: int | None = None


class SamplerUnit(Protocol):
    """One named step of the chain.

    Attributes:
        name: The unit's name in a chain's order (llama.cpp's `--samplers` name), and
            the name its cuts carry in the record.
        kind: "logits" (rewrites the logits before their order is read) or
            "candidates" (reads the order: filters and the temperature).
        placement: Where it runs: first, a ban or a constraint outside the order, a
            place in the order (joining it once switched on, for the samplers
            llama.cpp's chain lacks), right after another unit, last, or instead
            of the order (`sampling.settings.placement`).
        params: Its parameter record (`sampling.settings.params`): a frozen dataclass, one
            field per setting it owns, each carrying its `SettingSpec`; the
            settings hold one per unit, and the unit reads its own
            (`SamplerSettings.of`).
        specs: The settings it owns (`specs_of(params)`), each declared once: the
            flag, the panel's control, the compare key and the config key derive
            from the entry.
        group_titles: The title of each panel group its settings open (a group
            two units share may be titled by both, alike).
        label: Its name on the probability panel's bars (at most 8 cells).
        row_label: Its name on a row it removed (at most 6 cells).
        draws: Whether it hears each step's context (`begin`): it draws from the
            sampler's generator, or counts the reply's tokens.
        keeps_state: Whether its state follows from the draws it heard, which the
            tokens so far do not give back (`UnitBase.keeps_state`): beam search
            refuses a chain that holds such a unit.
    """

    name: ClassVar[str]
    kind: ClassVar[UnitKind]
    placement: ClassVar[Placement]
    params: ClassVar[type[Any]]
    specs: ClassVar[tuple[SettingSpec, ...]]
    group_titles: ClassVar[Mapping[str, str]]
    label: ClassVar[str]
    row_label: ClassVar[str]
    draws: ClassVar[bool]
    keeps_state: ClassVar[bool]

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """Its on-rule: whether `settings` switch it on (`from_settings` builds it);
        `UnitBase` derives it from the switches among its settings."""
        ...

    @classmethod
    def summary(
        cls, settings: SamplerSettings, style: SummaryStyle = "active"
    ) -> Mapping[str, str]:
        """Its parts of the settings' one-line summary, by setting name
        (`UnitBase.summary` gives them from the declarations)."""
        ...

    @classmethod
    def describe(cls, report: Report, settings: SamplerSettings) -> str:
        """Its line on the probability panel for a step that reported `report`."""
        ...

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> SamplerUnit | None:
        """The unit with its parameters from `settings`; None when they turn it off."""
        ...

    def begin(self, step: StepContext) -> None:
        """Take what this step needs from its context: draw from the generator, count
        the reply's tokens (every step when `draws`; every unit held when a step
        resumes a reply elsewhere or pins a target).

        Called before any unit applies, whether or not the order runs this unit,
        so that the stream of draws depends on the settings alone.
        """
        ...

    def apply(self, candidates: Candidates) -> None:
        """Change one step's candidates in place."""
        ...

    def accept(self, token: int, prob: float) -> None:
        """Hear the token drawn after the chain ran, and its probability in the
        distribution it was drawn from."""
        ...

    def report(self) -> Report | None:
        """The figures of the step it just ran, by name (None: nothing to report),
        asked after the chain ran and before the token is drawn. The step's record
        keeps them under the unit's name (`Step.reports`)."""
        ...

    def reset(self) -> None:
        """Start the state afresh (a new reply)."""
        ...

    @property
    def state(self) -> UnitState:
        """A snapshot of the state, for `restore`."""
        ...

    def restore(self, state: UnitState) -> None:
        """Put back a snapshot `state` gave, of this unit or of the unit of its name
        that ran under earlier settings (what of it no longer holds is dropped)."""
        ...


class RunningUnit(Protocol):
    """A unit as a chain runs it: a built-in unit, or a plugin behind its guard."""

    @property
    def name(self) -> str:
        """Its name."""
        ...

    @property
    def kind(self) -> UnitKind:
        """ "logits" or "candidates"."""
        ...

    @property
    def placement(self) -> Placement:
        """Where it runs."""
        ...

    @property
    def draws(self) -> bool:
        """Whether it hears each step's context."""
        ...

    @property
    def keeps_state(self) -> bool:
        """As `SamplerUnit.keeps_state`."""
        ...

    def report(self) -> Report | None:
        """As `SamplerUnit.report`."""
        ...

    def begin(self, step: StepContext) -> None:
        """As `SamplerUnit.begin`."""
        ...

    def apply(self, candidates: Candidates) -> None:
        """As `SamplerUnit.apply`."""
        ...

    def accept(self, token: int, prob: float) -> None:
        """As `SamplerUnit.accept`."""
        ...

    def reset(self) -> None:
        """As `SamplerUnit.reset`."""
        ...

    @property
    def state(self) -> UnitState:
        """As `SamplerUnit.state`."""
        ...

    def restore(self, state: UnitState) -> None:
        """As `SamplerUnit.restore`."""
        ...


@runtime_checkable
class Reshaping(Protocol):
    """A unit placed last that reshapes the distribution the chain ends with."""

    def reshape(self, kept: Kept, candidates: Candidates) -> Kept:
        """The distribution to draw from instead of `kept` (the chain's own)."""
        ...


class Stateless(UnitBase):
    """The interface's answers for a unit that keeps nothing between steps.

    A plugin takes its placement (a place in the order) from here too; a built-in
    unit declares its own (the registry checks so). The on-rule, the summary and the
    panel's line come from `UnitBase` unless the unit writes its own.
    """

    __slots__ = ()

    draws: ClassVar[bool] = False
    placement: ClassVar[Placement] = IN_ORDER

    def begin(self, step: StepContext) -> None:
        """Nothing to take from the step."""
        del step

    def accept(self, token: int, prob: float) -> None:
        """Nothing to learn from the token."""
        del token, prob

    def reset(self) -> None:
        """Nothing to start afresh."""

    @property
    def state(self) -> UnitState:
        """No state: None."""
        return None

    def restore(self, state: UnitState) -> None:
        """Nothing to put back."""
        del state
