"""Top-p (nucleus): keep the shortest most-probable prefix whose mass reaches p."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from sampling.candidates import Candidates
from sampling.samplers.base import SummaryStyle, declared_summary
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import IN_ORDER, Placement
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings

TopPScope = Literal["kept", "vocab"]
"""Where top-p measures its mass: "kept" after the cuts before it, "vocab" against the
whole vocabulary (candle's TopKThenTopP)."""


@dataclass(frozen=True, slots=True)
class TopPParams:
    """TopP's parameters, one field per setting.

    Attributes:
        top_p: Keep the shortest most-probable prefix whose mass reaches p; 1.0 is off.
        top_p_scope: "kept" measures p after top-k renormalises; "vocab" against the
            whole-vocabulary mass (candle's TopKThenTopP).
    """

    top_p: float = setting(
        SettingSpec(
            "top_p",
            "float",
            rank=30,
            default=1.0,
            off=1.0,
            label="top-p",
            help="nucleus: keep the mass p; 1 is off",
            minimum=0.0,
            minimum_open=True,
            maximum=1.0,
            slider=SliderRange(0.01, 1.0, hard_min=0.01, hard_max=1.0, fine=0.01, coarse=0.05),
            short_key="p",
            short_flag="-p",
            fixed_key="p",
            variations=(0.5, 0.8, 0.95, 1.0),
        )
    )
    top_p_scope: TopPScope = setting(
        SettingSpec(
            "top_p_scope",
            "choice",
            rank=40,
            default="kept",
            off="kept",
            label="top-p scope",
            help="measure p after top-k renormalises, or on the vocabulary",
            choices=(("kept", "kept"), ("vocab", "vocab")),
            needs="top_p",
        )
    )


@dataclass(frozen=True, slots=True)
class TopP(Stateless):
    """Keep the shortest prefix whose mass reaches p (the crossing token kept).

    Attributes:
        p: The mass to reach, in (0, 1).
        scope: "kept" measures the mass within the kept set (llama.cpp, HF);
            "vocab" against the whole vocabulary (candle's TopKThenTopP).
    """

    name: ClassVar[str] = "top_p"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = IN_ORDER
    params: ClassVar[type[TopPParams]] = TopPParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(TopPParams)
    group_titles: ClassVar[Mapping[str, str]] = {}
    label: ClassVar[str] = "top-p"
    row_label: ClassVar[str] = "top-p"
    p: float
    scope: TopPScope

    @classmethod
    def summary(
        cls, settings: SamplerSettings, style: SummaryStyle = "active"
    ) -> Mapping[str, str]:
        """top-p with its scope when not the kept set's: "p=0.9(vocab)"."""
        parts = declared_summary(cls.specs, settings, style)
        parts.pop("top_p_scope", None)
        scope = settings.of(TopPParams).top_p_scope
        if style == "active" and "top_p" in parts and scope != "kept":
            parts["top_p"] += f"({scope})"
        return parts

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> TopP | None:
        """Built when top_p is on (< 1)."""
        params = settings.of(TopPParams)
        return cls(params.top_p, params.top_p_scope) if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the prefix that reaches p."""
        found = candidates.mass_prefix(self.p, of_vocabulary=self.scope == "vocab")
        if found is not None:
            kept, ranked, weights = found
            candidates.cut(kept, self.name, ranked, weights=weights)
