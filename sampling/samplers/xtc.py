"""XTC, Exclude Top Choices (llama.cpp's `xtc`): on a step its coin allows, remove
every token at least `threshold` probable but the least probable of them. It keeps
a subset of the order that is not a prefix."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.engine import Candidates, ordered_ids, vocabulary_weights, weights_of
from sampling.samplers.unit import UnitKind
from sampling.setting_spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.settings import SamplerSettings

SETTINGS = (
    SettingSpec(
        "xtc_probability",
        "float",
        default=0.0,
        off=0.0,
        group="xtc",
        label="xtc prob.",
        help="chance per token that XTC removes the top choices; 0 is off",
        minimum=0.0,
        maximum=1.0,
        slider=SliderRange(0.0, 1.0, hard_min=0.0, hard_max=1.0, fine=0.01, coarse=0.1),
        short_key="xtc",
    ),
    SettingSpec(
        "xtc_threshold",
        "float",
        default=0.1,
        group="xtc",
        label="xtc thresh.",
        help="XTC removes all but the last token at least this probable; above 0.5 is off",
        minimum=0.0,
        maximum=1.0,
        slider=SliderRange(0.0, 0.5, hard_min=0.0, hard_max=1.0, fine=0.01, coarse=0.05),
        short_key="xtc_t",
        needs="xtc_probability",
    ),
)


@dataclass(frozen=True, slots=True)
class Xtc:
    """Exclude Top Choices: remove every token at least `threshold` probable but the last.

    It applies on a step with chance `probability` (the step's `xtc_roll`).

    Attributes:
        probability: The chance per step, in (0, 1].
        threshold: The probability a top choice has, at most 0.5.
    """

    name: ClassVar[str] = "xtc"
    kind: ClassVar[UnitKind] = "candidates"
    in_order: ClassVar[bool] = True
    specs: ClassVar[tuple[SettingSpec, ...]] = SETTINGS
    group_titles: ClassVar[Mapping[str, str]] = {"xtc": "XTC: exclude top choices"}
    label: ClassVar[str] = "xtc"
    row_label: ClassVar[str] = "xtc"
    probability: float
    threshold: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Xtc | None:
        """Built when XTC is on (probability > 0, threshold <= 0.5)."""
        if settings.xtc_probability <= 0.0 or settings.xtc_threshold > 0.5:
            return None
        return cls(settings.xtc_probability, settings.xtc_threshold)

    def apply(self, candidates: Candidates) -> None:
        """Remove the head of the order: the top choices but the least probable of them."""
        if candidates.xtc_roll > self.probability:
            return
        logits = candidates.logits
        ids = candidates.ids
        if ids is None:
            if logits.shape[0] < 2:
                return
            weights = vocabulary_weights(
                logits,
                candidates.maximum,
                candidates.temperature,
                candidates.workspace.array("filter-weights", logits.shape[0], np.float64),
            )
            top = int(np.count_nonzero(weights >= self.threshold * float(weights.sum())))
        else:
            if ids.shape[0] < 2:
                return
            weights = weights_of(logits, candidates.top, candidates.temperature, ids)
            top = int(np.count_nonzero(weights >= self.threshold * float(weights.sum())))
        if top < 2:
            return  # one top choice or none: XTC leaves the kept set alone
        ordered = ordered_ids(candidates)
        ranked = ordered if ids is None else None
        candidates.cut(ordered[top - 1 :], self.name, ranked, prefix=False)
