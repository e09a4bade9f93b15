"""The chain: sampler units in order, built once whenever the settings change.

The order is data: a tuple of unit names (llama.cpp's `--samplers` names) looked up
in the registry's `SAMPLERS`, the settings' `samplers` as `SamplerSettings.order`
places the temperature in it (see there). `build_chain` also takes any other order.
Two units run outside the order, as in llama.cpp's common sampler: `LogitBias`
always first, and `Mirostat`, which (when on) replaces the whole order after the
logit bias by a plain temperature and itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sampling.engine import Candidates, Kept, greedy_kept
from sampling.errors import SettingsError
from sampling.registry import ORDER_SETTING, SAMPLERS
from sampling.samplers.logit_bias import LogitBias
from sampling.samplers.mirostat import Mirostat
from sampling.samplers.temperature import Temperature
from sampling.samplers.unit import SamplerUnit
from sampling.settings import SamplerSettings

FILTER_ORDER: tuple[str, ...] = ("top_k", "top_p", "min_p")
"""The filters, in the order both of today's chains run them."""

DEFAULT_ORDER: tuple[str, ...] = ("penalties", "temperature", *FILTER_ORDER)
"""Temperature first (candle, Hugging Face)."""

TEMPERATURE_LAST_ORDER: tuple[str, ...] = ("penalties", *FILTER_ORDER, "temperature")
"""Temperature after the filters (llama.cpp's default; `temperature_last`)."""


def order_of(settings: SamplerSettings) -> tuple[str, ...]:
    """The order of the units the settings ask for (`SamplerSettings.order`)."""
    return settings.order


@dataclass(frozen=True, slots=True)
class Chain:
    """The units one sampler runs every step, in order.

    Attributes:
        order: The names the chain was built from (units the settings turn off
            included).
        units: The units that are on, in order.
        greedy: Temperature 0: only the "logits" units run, and the argmax is kept.
    """

    order: tuple[str, ...]
    units: tuple[SamplerUnit, ...]
    greedy: bool

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the units that run."""
        return tuple(unit.name for unit in self.units)

    def run(self, candidates: Candidates) -> Kept:
        """Apply every unit to one step's candidates; return the distribution they end with."""
        for unit in self.units:
            unit.apply(candidates)
        if self.greedy:
            return greedy_kept(candidates.argmax)
        return candidates.distribution()


def build_chain(settings: SamplerSettings, order: Sequence[str] | None = None) -> Chain:
    """The chain of units for some settings.

    Args:
        settings: Each unit's parameters; a unit they turn off is left out.
        order: Unit names in the order to run them; `order_of(settings)` when None.

    Raises:
        SettingsError: The order names an unknown unit, names one twice, or puts a
            "logits" unit (penalties) after a unit that reads the order.
    """
    names = checked_order(order_of(settings) if order is None else order)
    greedy = settings.greedy
    units: list[SamplerUnit] = []
    bias = LogitBias.from_settings(settings)
    if bias is not None:
        units.append(bias)
    if settings.mirostat:
        if not greedy:
            units += [Temperature(settings.temperature), Mirostat(settings.mirostat)]
        return Chain(names, tuple(units), greedy)
    for name in names:
        unit_type = SAMPLERS[name]
        if greedy and unit_type.kind != "logits":
            continue  # at temperature 0 only the argmax counts: nothing to filter
        unit = unit_type.from_settings(settings)
        if unit is not None:
            units.append(unit)
    return Chain(names, tuple(units), greedy)


def checked_order(order: Sequence[str]) -> tuple[str, ...]:
    """`order` as a tuple, checked.

    Raises:
        SettingsError: As for `build_chain`; the message names the offending unit.
    """
    if isinstance(order, str):
        raise SettingsError("samplers", order, "a sequence of sampler names, not one string")
    names = tuple(order)
    problem = ORDER_SETTING.order_problem(names)
    if problem is not None:
        raise SettingsError("samplers", names, problem)
    return names
