"""Penalties: repeat, frequency and presence penalties over the last-n window.

llama.cpp's `penalties` sampler; the arithmetic is `sampling.penalties`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.candidates import Candidates
from sampling.penalties import penalized_logits
from sampling.placement import IN_ORDER, Placement
from sampling.samplers.unit import Stateless, UnitKind
from sampling.setting_spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.settings_record import SamplerSettings

SETTINGS = (
    SettingSpec(
        "repeat_penalty",
        "float",
        default=1.0,
        group="penalties",
        off=1.0,
        label="rep. penalty",
        help="repeat penalty; 1 is off",
        minimum=0.0,
        minimum_open=True,
        slider=SliderRange(0.5, 2.0, hard_min=0.5, hard_max=10.0, fine=0.01, coarse=0.1),
        short_key="rep",
        fixed_key="rep",
        needs="repeat_last_n",
        variations=(1.0, 1.1, 1.3, 1.5),
    ),
    SettingSpec(
        "repeat_last_n",
        "int",
        default=0,
        group="penalties",
        off=0,
        label="rep. last-n",
        help="tokens the penalties see; 0 is off",
        minimum=0,
        slider=SliderRange(0, 512, hard_min=0, hard_max=1_000_000, fine=1, coarse=16),
    ),
    SettingSpec(
        "frequency_penalty",
        "float",
        default=0.0,
        group="penalties",
        off=0.0,
        label="freq penalty",
        help="subtract count * f",
        slider=SliderRange(-2.0, 2.0, hard_min=-2.0, hard_max=2.0, fine=0.01, coarse=0.1),
        short_key="freq",
        needs="repeat_last_n",
    ),
    SettingSpec(
        "presence_penalty",
        "float",
        default=0.0,
        group="penalties",
        off=0.0,
        label="pres penalty",
        help="subtract it once if seen",
        slider=SliderRange(-2.0, 2.0, hard_min=-2.0, hard_max=2.0, fine=0.01, coarse=0.1),
        short_key="pres",
        needs="repeat_last_n",
    ),
)


@dataclass(frozen=True, slots=True)
class Penalties(Stateless):
    """Repeat, frequency and presence penalties over the last-n window.

    Attributes:
        settings: The settings holding the four penalty fields.
    """

    name: ClassVar[str] = "penalties"
    kind: ClassVar[UnitKind] = "logits"
    placement: ClassVar[Placement] = IN_ORDER
    specs: ClassVar[tuple[SettingSpec, ...]] = SETTINGS
    group_titles: ClassVar[Mapping[str, str]] = {"penalties": "penalties"}
    label: ClassVar[str] = "penalties"
    row_label: ClassVar[str] = "pen."
    settings: SamplerSettings

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """On when settings.penalizes."""
        return settings.penalizes

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Penalties | None:
        """Built when some penalty can change a logit."""
        return cls(settings) if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Replace the logits by a penalised copy, with their new maximum."""
        # A fresh copy, not a workspace buffer: copying into a buffer that lies 16
        # bytes past the logits modulo 4 KiB (4K aliasing) runs ten times slower.
        penalized = penalized_logits(candidates.logits, self.settings, candidates.history)
        if penalized is not candidates.logits:
            argmax = int(np.argmax(penalized))
            candidates.logits = penalized
            candidates.argmax = argmax
            candidates.maximum = float(penalized[argmax])
