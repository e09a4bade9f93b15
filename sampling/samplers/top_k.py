"""Top-k: keep the k most probable tokens (llama.cpp's `top_k`)."""

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
class TopKParams:
    """TopK's parameters, one field per setting.

    Attributes:
        top_k: Keep the k most probable tokens; 0 turns it off.
    """

    top_k: int = setting(
        SettingSpec(
            "top_k",
            "int",
            rank=20,
            default=0,
            off=0,
            label="top-k",
            help="keep the k most probable tokens; 0 is off",
            minimum=0,
            slider=SliderRange(0, 100, hard_min=0, hard_max=1_000_000, fine=1, coarse=10),
            short_key="k",
            short_flag="-k",
            fixed_key="k",
            variations=(1, 10, 40, 0),
        )
    )


@dataclass(frozen=True, slots=True)
class TopK(Stateless):
    """Keep the k most probable tokens (the same at any temperature).

    Attributes:
        k: How many tokens to keep (> 0).
    """

    name: ClassVar[str] = "top_k"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = IN_ORDER
    params: ClassVar[type[TopKParams]] = TopKParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(TopKParams)
    group_titles: ClassVar[Mapping[str, str]] = {}
    label: ClassVar[str] = "top-k"
    row_label: ClassVar[str] = "top-k"
    k: int

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> TopK | None:
        """Built when top_k is on (> 0)."""
        return cls(settings.of(TopKParams).top_k) if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Keep the first k of the order."""
        if self.k < candidates.size:
            candidates.cut(candidates.head(self.k), self.name)
