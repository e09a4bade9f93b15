"""The interface every sampler unit has, and what it declares about itself.

Units come in two kinds, and a chain keeps them in this order:

- "logits" units rewrite the whole vocabulary's logits before anything reads
  their order (the penalties, DRY, the logit bias).
- "candidates" units read the order. A filter keeps a shorter subset of it and
  names itself as the cut; the temperature sets the temperature the later units
  and the final distribution read the logits at.

A unit is built from the settings (`from_settings`) whenever they change, and a
unit the settings turn off is not built at all. Every step, a unit that draws from
the sampler's generator is handed it first (`begin`); the units of the chain then
`apply` in order; after the draw each of them hears the token drawn (`accept`).
A unit keeps its own state (mirostat's mu): `state` is a snapshot of it, which
`restore` puts back, and `reset` starts it afresh. When the settings change, each
new unit is handed the state of the unit of its name that ran before (`restore`),
and takes what of it still holds.

Units without state derive from `Stateless`, which answers all of that for them.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol

from sampling.setting_spec import SettingSpec

if TYPE_CHECKING:
    from sampling.candidates import Candidates
    from sampling.rng import UniformSource
    from sampling.settings import SamplerSettings

UnitKind = Literal["logits", "candidates"]

UnitState = Hashable | None
"""A snapshot of a unit's state: an immutable value (None for a unit without state)."""


class SamplerUnit(Protocol):
    """One named step of the chain.

    Attributes:
        name: The unit's name in a chain's order (llama.cpp's `--samplers` name), and
            the name its cuts carry in the record.
        kind: "logits" (rewrites the logits before their order is read) or
            "candidates" (reads the order: filters and the temperature).
        in_order: Whether an order may name it; the logit bias (always first) and
            mirostat (which replaces the order) run outside it, as in llama.cpp.
        specs: The settings it owns, each declared once: the flag, the panel's
            control, the compare key and the config key derive from the entry.
        group_titles: The title of each panel group its settings open (a group
            two units share may be titled by both, alike).
        label: Its name on the probability panel's bars (at most 8 cells).
        row_label: Its name on a row it removed (at most 6 cells).
        draws: Whether it draws from the sampler's generator each step (`begin`).
    """

    name: ClassVar[str]
    kind: ClassVar[UnitKind]
    in_order: ClassVar[bool]
    specs: ClassVar[tuple[SettingSpec, ...]]
    group_titles: ClassVar[Mapping[str, str]]
    label: ClassVar[str]
    row_label: ClassVar[str]
    draws: ClassVar[bool]

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> SamplerUnit | None:
        """The unit with its parameters from `settings`; None when they turn it off."""
        ...

    def begin(self, source: UniformSource) -> None:
        """Draw what this step needs from the sampler's generator (when `draws`).

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
    def draws(self) -> bool:
        """Whether it draws from the generator each step."""
        ...

    def begin(self, source: UniformSource) -> None:
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


class Stateless:
    """The interface's answers for a unit that keeps nothing between steps."""

    __slots__ = ()

    draws: ClassVar[bool] = False

    def begin(self, source: UniformSource) -> None:
        """Nothing to draw."""
        del source

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
