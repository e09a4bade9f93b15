"""The control vectors' strength: a setting the model takes, not a step of the chain.

Control vectors (`--control-vector`, `backend.llama.control_vector`) shift the model's
own activations, so they act before any logit exists. `control_strength` multiplies
the scale of every control vector the model was loaded with: 1 is as loaded, 0 none,
2 twice as strong, a negative strength the other way. It is a setting like any
sampler's so that the sampling panel shows it as a slider, a stored reply records it
and replays with it, and presets carry it; the backend applies it to the model before
each reply (`SessionBackend.prepare_model`): a vector shapes every token of the
context, so a new strength applies from the next reply, whose conversation is then
decoded again. The unit changes no logits: it is never built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sampling.candidates import Candidates
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import FIRST, Placement
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings

CONTROL_GROUP = "control"
"""The settings group of the control vectors' strength (the panel shows it only while
the model has a control vector: without one the strength does nothing)."""


@dataclass(frozen=True, slots=True)
class ControlStrengthParams:
    """The control vectors' strength, one field.

    Attributes:
        control_strength: What every loaded control vector's scale is multiplied by.
    """

    control_strength: float = setting(
        SettingSpec(
            "control_strength",
            "float",
            default=1.0,
            off=1.0,
            group=CONTROL_GROUP,
            label="strength",
            help="multiplies every --control-vector's scale (1: as loaded, 0: none, negative:"
            " the other way); applies from the next reply",
            slider=SliderRange(-2.0, 4.0, hard_min=-100.0, hard_max=100.0, fine=0.05, coarse=0.5),
            short_key="cvec",
            per_column=False,
        )
    )


@dataclass(slots=True, eq=False)
class ControlStrength(Stateless):
    """The control vectors' strength (see the module doc): a setting, never built."""

    name: ClassVar[str] = "control"
    kind: ClassVar[UnitKind] = "logits"
    placement: ClassVar[Placement] = FIRST
    params: ClassVar[type[ControlStrengthParams]] = ControlStrengthParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(ControlStrengthParams)
    group_titles: ClassVar[Mapping[str, str]] = {
        CONTROL_GROUP: "control vectors (--control-vector; next reply)"
    }
    label: ClassVar[str] = "control"
    row_label: ClassVar[str] = "cvec"
    draws: ClassVar[bool] = False

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """Never on as a step of the chain, whatever the strength: the model applies it
        (see the module doc)."""
        del settings
        return False

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> ControlStrength | None:
        """Never built: the model applies the strength (see the module doc)."""
        del settings
        return None

    def apply(self, candidates: Candidates) -> None:
        """Nothing: the strength acts on the model, before the logits."""
        del candidates


def control_strength(settings: SamplerSettings) -> float:
    """The control vectors' strength `settings` ask for (1 where the unit is not loaded)."""
    if "control_strength" not in settings.registry.settings_by_name:
        return 1.0
    value = settings.value("control_strength")
    return float(value) if isinstance(value, float | int) else 1.0
