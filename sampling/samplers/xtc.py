"""XTC, Exclude Top Choices (llama.cpp's `xtc`): on a step its coin allows, remove
every token at least `threshold` probable but the least probable of them. It keeps
a subset of the order that is not a prefix."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.candidates import Candidates
from sampling.samplers.base import SummaryStyle, declared_summary
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import IN_ORDER, Placement
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.samplers.unit import StepContext
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class XtcParams:
    """Xtc's parameters, one field per setting.

    Attributes:
        xtc_probability: The chance per token that XTC applies; 0.0 is off.
        xtc_threshold: XTC removes every token at least this probable but the least
            probable of them; above 0.5 it never applies.
    """

    xtc_probability: float = setting(
        SettingSpec(
            "xtc_probability",
            "float",
            rank=160,
            default=0.0,
            off=0.0,
            group="xtc",
            label="xtc prob.",
            help="chance per token that XTC removes the top choices; 0 is off",
            minimum=0.0,
            maximum=1.0,
            slider=SliderRange(0.0, 1.0, hard_min=0.0, hard_max=1.0, fine=0.01, coarse=0.1),
            short_key="xtc",
        )
    )
    xtc_threshold: float = setting(
        SettingSpec(
            "xtc_threshold",
            "float",
            rank=170,
            default=0.1,
            group="xtc",
            label="xtc thresh.",
            help="XTC removes all but the last token at least this probable; above 0.5 is off",
            minimum=0.0,
            maximum=1.0,
            slider=SliderRange(0.0, 0.5, hard_min=0.0, hard_max=1.0, fine=0.01, coarse=0.05),
            short_key="xtc_t",
            needs="xtc_probability",
        )
    )


@dataclass(slots=True)
class Xtc(Stateless):
    """Exclude Top Choices: remove every token at least `threshold` probable but the last.

    It applies on a step with chance `probability`: each step it rolls a coin from
    the sampler's generator (`begin`; with `probability` 1 it applies without one),
    and applies unless the coin is above `probability`. Nothing outlives the step.

    Attributes:
        probability: The chance per step, in (0, 1].
        threshold: The probability a top choice has, at most 0.5.
    """

    name: ClassVar[str] = "xtc"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = IN_ORDER
    params: ClassVar[type[XtcParams]] = XtcParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(XtcParams)
    group_titles: ClassVar[Mapping[str, str]] = {"xtc": "XTC: exclude top choices"}
    label: ClassVar[str] = "xtc"
    row_label: ClassVar[str] = "xtc"
    draws: ClassVar[bool] = True
    probability: float
    threshold: float
    roll: float = field(default=0.0, compare=False)
    """This step's coin, in [0, 1) (0.0 until a generator is handed: XTC applies)."""

    @classmethod
    def summary(
        cls, settings: SamplerSettings, style: SummaryStyle = "active"
    ) -> Mapping[str, str]:
        """XTC's settings while it is on (a threshold above 0.5 switches it off too)."""
        if style == "active" and not cls.is_on(settings):
            return {}
        return declared_summary(cls.specs, settings, style)

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """On when settings.xtc_probability > 0.0 and settings.xtc_threshold <= 0.5."""
        params = settings.of(XtcParams)
        return params.xtc_probability > 0.0 and params.xtc_threshold <= 0.5

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Xtc | None:
        """Built when XTC is on (probability > 0, threshold <= 0.5)."""
        params = settings.of(XtcParams)
        if not cls.is_on(settings):
            return None
        return cls(params.xtc_probability, params.xtc_threshold)

    def begin(self, step: StepContext) -> None:
        """Roll this step's coin (none is needed when XTC always applies, nor taken
        without a generator: XTC then applies)."""
        if self.probability < 1.0 and step.source is not None:
            self.roll = step.source.uniform()

    def apply(self, candidates: Candidates) -> None:
        """Remove the head of the order: the top choices but the least probable of them."""
        if self.roll > self.probability or candidates.size < 2:
            return
        weights = candidates.weights()
        top = int(np.count_nonzero(weights >= self.threshold * float(weights.sum())))
        if top < 2:
            return  # one top choice or none: XTC leaves the kept set alone
        candidates.cut(candidates.ordered()[top - 1 :], self.name, prefix=False)
