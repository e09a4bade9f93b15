"""Min-p: keep the tokens at least min_p times as probable as the top one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sampling.candidates import Candidates
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import IN_ORDER, Placement
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class MinPParams:
    """MinP's parameters, one field per setting.

    Attributes:
        min_p: Keep tokens with p_i >= min_p * p_max; 0.0 is off.
    """

    min_p: float = setting(
        SettingSpec(
            "min_p",
            "float",
            rank=50,
            default=0.0,
            off=0.0,
            label="min-p",
            help="keep p >= min_p * p_max; 0 is off",
            minimum=0.0,
            maximum=1.0,
            maximum_open=True,
            slider=SliderRange(0.0, 0.99, hard_min=0.0, hard_max=0.99, fine=0.01, coarse=0.05),
            fixed_key="min-p",
            variations=(0.0, 0.05, 0.1, 0.2),
        )
    )


@dataclass(frozen=True, slots=True)
class MinP(Stateless):
    """Keep tokens with p >= min_p * p_max (a prefix: the order is by probability).

    Attributes:
        min_p: The fraction of the top probability a token needs, in (0, 1).
    """

    name: ClassVar[str] = "min_p"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = IN_ORDER
    params: ClassVar[type[MinPParams]] = MinPParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(MinPParams)
    group_titles: ClassVar[Mapping[str, str]] = {}
    label: ClassVar[str] = "min-p"
    row_label: ClassVar[str] = "min-p"
    min_p: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> MinP | None:
        """Built when min_p is on (> 0)."""
        return cls(settings.of(MinPParams).min_p) if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the tokens at least min_p as probable as the top one."""
        found = candidates.weights_at_least(self.min_p)
        if found is not None:
            kept, ranked, weights = found
            candidates.cut(kept, self.name, ranked, weights=weights)
