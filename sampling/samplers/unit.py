"""The interface every sampler unit has, and what it declares about itself.

Units come in two kinds, and a chain keeps them in this order:

- "logits" units rewrite the whole vocabulary's logits before anything reads
  their order (the penalties, DRY, the logit bias).
- "candidates" units read the order. A filter keeps a shorter subset of it and
  names itself as the cut; the temperature sets the temperature the later units
  and the final distribution read the logits at.

A unit declares where it runs (`placement`, `sampling.placement`) and when it is on
(`is_on`); the order a settings record stores and the chain that runs are both
derived from those two. A unit is built from the settings (`from_settings`) whenever
they change, and a unit the settings turn off is not built at all. Every step, a
unit that reads the step's context (the generator it draws from, the reply's length
when a step continues it elsewhere, the end-of-generation tokens, a pinned target)
hears it first (`begin`); the units of the chain then `apply` in order; after the
draw each of them hears the token drawn (`accept`). A unit placed last may reshape
the distribution the chain ends with (`Reshaping`).
A unit keeps its own state (mirostat's mu): `state` is a snapshot of it, which
`restore` puts back, and `reset` starts it afresh. When the settings change, each
new unit is handed the state of the unit of its name that ran before (`restore`),
and takes what of it still holds.

Units without state derive from `Stateless`, which answers all of that for them.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from sampling.placement import IN_ORDER, Placement
from sampling.setting_spec import SettingSpec

if TYPE_CHECKING:
    from sampling.candidates import Candidates
    from sampling.kept import Kept
    from sampling.logits import FloatArray
    from sampling.rng import UniformSource
    from sampling.settings_record import SamplerSettings

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
        pinned_target: A recorded step's adapted target that this step uses instead
            of adaptive-p's moving average (a what-if of that step), or None.
        second: A second distribution's logits for this step (a negative prompt's,
            decoded beside the reply), or None.
        small: A smaller model's logits for this step (decoding the same text in
            step), or None.
    """

    source: UniformSource | None = None
    resumed_at: int | None = None
    end_of_generation: tuple[int, ...] = ()
    pinned_target: float | None = None
    second: FloatArray | None = None
    small: FloatArray | None = None


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
            of the order (`sampling.placement`).
        params: Its parameter record (`sampling.params`): a frozen dataclass, one
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

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """Its on-rule: whether `settings` switch it on (`from_settings` builds it)."""
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


class Stateless:
    """The interface's answers for a unit that keeps nothing between steps.

    A plugin takes its placement (a place in the order) and its on-rule (built by
    `from_settings`) from here too; a built-in unit declares both itself (the
    registry checks so).
    """

    __slots__ = ()

    draws: ClassVar[bool] = False
    placement: ClassVar[Placement] = IN_ORDER

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """On when `from_settings` builds the unit."""
        from_settings = getattr(cls, "from_settings", None)
        return from_settings is not None and from_settings(settings) is not None

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
