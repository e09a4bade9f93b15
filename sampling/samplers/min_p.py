"""Min-p: keep the tokens at least min_p times as probable as the top one."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.engine import Candidates, weights_of
from sampling.ordering import sort_descending
from sampling.samplers.unit import UnitKind
from sampling.setting_spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.settings import SamplerSettings

SETTINGS = (
    SettingSpec(
        "min_p",
        "float",
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
    ),
)

_LARGEST_FLOAT32 = float(np.finfo(np.float32).max)


@dataclass(frozen=True, slots=True)
class MinP:
    """Keep tokens with p >= min_p * p_max (a prefix: the order is by probability).

    Attributes:
        min_p: The fraction of the top probability a token needs, in (0, 1).
    """

    name: ClassVar[str] = "min_p"
    kind: ClassVar[UnitKind] = "candidates"
    in_order: ClassVar[bool] = True
    specs: ClassVar[tuple[SettingSpec, ...]] = SETTINGS
    group_titles: ClassVar[Mapping[str, str]] = {}
    label: ClassVar[str] = "min-p"
    row_label: ClassVar[str] = "min-p"
    min_p: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> MinP | None:
        """Built when min_p is on (> 0)."""
        return cls(settings.min_p) if settings.min_p > 0.0 else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the tokens at least min_p as probable as the top one."""
        logits = candidates.logits
        maximum = candidates.maximum
        temperature = candidates.temperature
        ids = candidates.ids
        whole_vocabulary = ids is None
        if ids is None:
            # p_i / p_max = exp((x_i - max) / T) >= min_p  <=>  x_i >= max + T ln(min_p);
            # select a little below that bound, then decide exactly in float64.
            bound = maximum + temperature * math.log(self.min_p)
            lowest = bound - 1e-3 * (1.0 + abs(bound))
            if lowest < -_LARGEST_FLOAT32 and logits.dtype == np.float32:
                lowest = -math.inf  # compared in float32, it would round there anyway
            band = np.flatnonzero(logits >= lowest)
            ids = sort_descending(logits, band)
            ratios = weights_of(logits, maximum, temperature, ids)
        else:
            # Against the kept set's own top (XTC or typical-p may have removed the maximum).
            ratios = candidates.kept_weights()
        keep = int(np.count_nonzero(ratios >= self.min_p))
        if keep >= logits.shape[0] or (keep >= ids.shape[0] and not whole_vocabulary):
            return
        # Over the whole vocabulary the sorted band is a longer prefix of the order.
        candidates.cut(
            ids[:keep], "min_p", ids if whole_vocabulary else None, weights=ratios[:keep]
        )
