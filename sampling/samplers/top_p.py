"""Top-p (nucleus): keep the shortest most-probable prefix whose mass reaches p."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from sampling.engine import Candidates, vocabulary_weights
from sampling.ordering import prefix_reaching
from sampling.samplers.unit import UnitKind
from sampling.setting_spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.settings import SamplerSettings

TopPScope = Literal["kept", "vocab"]

SETTINGS = (
    SettingSpec(
        "top_p",
        "float",
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
    ),
    SettingSpec(
        "top_p_scope",
        "choice",
        default="kept",
        off="kept",
        label="top-p scope",
        help="measure p after top-k renormalises, or on the vocabulary",
        choices=(("kept", "kept"), ("vocab", "vocab")),
        needs="top_p",
    ),
)


@dataclass(frozen=True, slots=True)
class TopP:
    """Keep the shortest prefix whose mass reaches p (the crossing token kept).

    Attributes:
        p: The mass to reach, in (0, 1).
        scope: "kept" measures the mass within the kept set (llama.cpp, HF);
            "vocab" against the whole vocabulary (candle's TopKThenTopP).
    """

    name: ClassVar[str] = "top_p"
    kind: ClassVar[UnitKind] = "candidates"
    in_order: ClassVar[bool] = True
    specs: ClassVar[tuple[SettingSpec, ...]] = SETTINGS
    group_titles: ClassVar[Mapping[str, str]] = {}
    label: ClassVar[str] = "top-p"
    row_label: ClassVar[str] = "top-p"
    p: float
    scope: TopPScope

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> TopP | None:
        """Built when top_p is on (< 1)."""
        return cls(settings.top_p, settings.top_p_scope) if settings.top_p < 1.0 else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the prefix that reaches p."""
        logits = candidates.logits
        maximum = candidates.top
        temperature = candidates.temperature
        ids = candidates.ids
        top_p = self.p
        if ids is None or self.scope == "vocab":
            all_weights = vocabulary_weights(
                logits,
                maximum,
                temperature,
                candidates.workspace.array("filter-weights", logits.shape[0], np.float64),
            )
            total = float(all_weights.sum())
        if ids is None:
            prefix, ranked = prefix_reaching(
                logits, maximum, temperature, all_weights, top_p * total
            )
            if prefix.shape[0] < logits.shape[0]:
                candidates.cut(prefix, "top_p", ranked, weights=all_weights[prefix])
            return
        weights = candidates.kept_weights()
        if self.scope == "vocab":
            # candle's TopKThenTopP: p against the whole vocabulary's mass.
            if top_p >= float(weights.sum()) / total:
                return
        else:
            total = float(weights.sum())
        cumulative = np.cumsum(weights)
        cumulative /= total
        keep = int(np.searchsorted(cumulative, top_p, side="left")) + 1
        if keep < ids.shape[0]:
            candidates.cut(ids[:keep], "top_p", weights=weights[:keep])
