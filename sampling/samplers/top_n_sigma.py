"""Top-n-sigma: keep the logits within n standard deviations of the top.

llama.cpp's `top_n_sigma` (src/llama-sampling.cpp): the deviation is taken over
the kept, finite logits; the kept set is a prefix of the order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.candidates import Candidates
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import IN_ORDER, Placement
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class TopNSigmaParams:
    """TopNSigma's parameters, one field per setting.

    Attributes:
        top_n_sigma: Keep logits >= max - n * std of the kept logits; <= 0 is off.
    """

    top_n_sigma: float = setting(
        SettingSpec(
            "top_n_sigma",
            "float",
            rank=150,
            default=-1.0,
            off=-1.0,
            off_at_or_below=0.0,
            group="typical",
            label="top-n-sigma",
            help="keep logits within n standard deviations of the top; <= 0 is off",
            minimum=-1.0,
            slider=SliderRange(-1.0, 5.0, hard_min=-1.0, hard_max=100.0, fine=0.05, coarse=0.5),
            short_key="nsigma",
        )
    )


@dataclass(frozen=True, slots=True)
class TopNSigma(Stateless):
    """Keep logits at least max - n * std (std over the kept, finite logits).

    Attributes:
        n: How many standard deviations below the top (> 0).
    """

    name: ClassVar[str] = "top_n_sigma"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = IN_ORDER
    params: ClassVar[type[TopNSigmaParams]] = TopNSigmaParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(TopNSigmaParams)
    group_titles: ClassVar[Mapping[str, str]] = {"typical": "typical-p · top-n-σ"}
    label: ClassVar[str] = "top-n-σ"
    row_label: ClassVar[str] = "top-nσ"
    n: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> TopNSigma | None:
        """Built when top_n_sigma is on (> 0)."""
        return cls(settings.of(TopNSigmaParams).top_n_sigma) if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the logits within n standard deviations of the top."""
        values = candidates.kept_logits()
        if values.shape[0] <= 1:
            return
        finite = values[np.isfinite(values)].astype(np.float64)
        bound = float(finite.max()) - self.n * float(finite.std())
        kept = candidates.logits_at_least(bound)
        if kept is not None:
            candidates.cut(kept, self.name)
