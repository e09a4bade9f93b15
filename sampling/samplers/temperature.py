"""Temperature, fixed or dynamic (llama.cpp's `temperature` and its `temp_ext`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.candidates import Candidates
from sampling.samplers.base import SummaryStyle, declared_summary
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import IN_ORDER, Placement
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class TemperatureParams:
    """Temperature's parameters, one field per setting.

    Attributes:
        temperature: Divides the logits; below 1e-6 (0 included) means greedy argmax.
        temperature_last: Run "temperature" last whatever its place in `samplers` (off:
            it runs where `samplers` puts it).
        dynatemp_range: Dynamic temperature: temperature +- range by the kept set's
            normalised entropy; 0.0 is off.
        dynatemp_exponent: The entropy's exponent in the dynamic temperature.
    """

    temperature: float = setting(
        SettingSpec(
            "temperature",
            "float",
            rank=10,
            default=1.0,
            label="temperature",
            help="temperature; 0 is greedy",
            minimum=0.0,
            slider=SliderRange(0.0, 2.0, hard_min=0.0, hard_max=100.0, fine=0.01, coarse=0.1),
            short_key="t",
            short_flag="-t",
            fixed_key="T",
            variations=(0.5, 0.8, 1.2, 1.5),
        )
    )
    temperature_last: bool = setting(
        SettingSpec(
            "temperature_last",
            "bool",
            rank=100,
            default=False,
            off=False,
            label="temperature",
            help="run temperature last whatever the chain order says",
            choices=((False, "in order"), (True, "last")),
            summary_key="t-last",
            needs="temperature",
        )
    )
    dynatemp_range: float = setting(
        SettingSpec(
            "dynatemp_range",
            "float",
            rank=260,
            default=0.0,
            off=0.0,
            group="dynatemp",
            label="dynatemp +-",
            help="dynamic temperature: temperature +- range, by the entropy; 0 is off",
            minimum=0.0,
            slider=SliderRange(0.0, 2.0, hard_min=0.0, hard_max=100.0, fine=0.01, coarse=0.1),
            short_key="dyn",
        )
    )
    dynatemp_exponent: float = setting(
        SettingSpec(
            "dynatemp_exponent",
            "float",
            rank=270,
            default=1.0,
            group="dynatemp",
            label="dynatemp exp",
            help="dynamic temperature: how the normalised entropy maps to it",
            minimum=0.0,
            slider=SliderRange(0.0, 4.0, hard_min=0.0, hard_max=100.0, fine=0.01, coarse=0.25),
            short_key="dyn_exp",
            needs="dynatemp_range",
        )
    )


@dataclass(frozen=True, slots=True)
class Temperature(Stateless):
    """Sets the temperature the later units and the final distribution read at.

    The logits are never divided here: each reader scales (logit - max) by the
    temperature it finds, so the filters before this unit read temperature 1. With a
    dynamic range (llama.cpp's `temp_ext`), the temperature is
    min + (max - min) * (H / log n) ** exponent over [t - range, t + range], H the
    entropy of the n kept tokens.

    Attributes:
        temperature: The temperature (> 0: a greedy chain has no such unit).
        dynamic_range: The dynamic range (0: a fixed temperature).
        exponent: The dynamic temperature's exponent.
    """

    name: ClassVar[str] = "temperature"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = IN_ORDER
    params: ClassVar[type[TemperatureParams]] = TemperatureParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(TemperatureParams)
    group_titles: ClassVar[Mapping[str, str]] = {"dynatemp": "dynamic temperature"}
    label: ClassVar[str] = "temp"
    row_label: ClassVar[str] = "temp"
    temperature: float
    dynamic_range: float = 0.0
    exponent: float = 1.0

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """On when not settings.greedy."""
        return not settings.greedy

    @classmethod
    def summary(
        cls, settings: SamplerSettings, style: SummaryStyle = "active"
    ) -> Mapping[str, str]:
        """The temperature always ("greedy" below `GREEDY_TEMPERATURE`), dynamic
        temperature when on; `temperature_last` is the order's to name."""
        parts = declared_summary(cls.specs, settings, style)
        parts.pop("temperature_last", None)
        if style == "active":
            value = settings.of(TemperatureParams).temperature
            parts["temperature"] = "greedy" if settings.greedy else f"t={value:g}"
        return parts

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Temperature | None:
        """Built unless the temperature means greedy."""
        params = settings.of(TemperatureParams)
        if not cls.is_on(settings):
            return None
        return cls(params.temperature, params.dynatemp_range, params.dynatemp_exponent)

    def apply(self, candidates: Candidates) -> None:
        """Read everything from here on at this (or the dynamic) temperature."""
        if self.dynamic_range <= 0.0:
            candidates.temperature = self.temperature
            return
        size = candidates.size
        if size <= 1:
            return
        low = max(0.0, self.temperature - self.dynamic_range)
        high = self.temperature + self.dynamic_range
        weights = candidates.weights()
        probs = weights / weights.sum()
        nonzero = probs[probs > 0.0]
        entropy = float(-np.sum(nonzero * np.log(nonzero)))
        dynamic = low + (high - low) * (entropy / math.log(size)) ** self.exponent
        if dynamic <= 0.0:  # llama.cpp keeps the top token alone
            candidates.cut(candidates.head(1), self.name)
            return
        candidates.temperature = candidates.temperature * dynamic
