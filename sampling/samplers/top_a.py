"""Top-a: keep the tokens with p >= a * p_max² (KoboldCpp, text-generation-webui).

KoboldCpp's `sample_top_a` (gpttype_adapter.cpp): softmax the candidates, then keep
them in descending order until the first whose probability is below
`a * maxprob * maxprob` (at least one token, `min_keep` 1); a <= 0 is off.
text-generation-webui's `TopALogitsWarper` (modules/sampler_hijack.py) removes the
same tokens, `probs < probs_max * probs_max * top_a`. The probabilities are those
of the kept set at the temperature reached so far, as every filter reads them here.
A peaked step (large p_max) cuts hard; a flat one keeps many tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt

from sampling.candidates import Candidates
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import CUTOFF, Placement
from sampling.settings.spec import SettingSpec, SliderRange
from sampling.weight_floor import cut_below_weight, kept_normaliser

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class TopAParams:
    """TopA's parameters, one field per setting.

    Attributes:
        top_a: Keep tokens with p >= top_a * p_max² (KoboldCpp); 0.0 is off.
    """

    top_a: float = setting(
        SettingSpec(
            "top_a",
            "float",
            rank=280,
            default=0.0,
            off=0.0,
            group="cutoffs",
            label="top-a",
            help="keep p >= top_a * p_max**2 (KoboldCpp); 0 is off",
            minimum=0.0,
            maximum=1.0,
            slider=SliderRange(0.0, 1.0, hard_min=0.0, hard_max=1.0, fine=0.01, coarse=0.05),
        )
    )


def top_a_count(probs: npt.NDArray[np.float64], a: float) -> int:
    """How many tokens top-a keeps of a distribution sorted in descending order.

    Args:
        probs: The kept set's probabilities (summing to 1), most probable first.
        a: The factor, in (0, 1].

    Returns:
        The length of the kept prefix: the tokens with p >= a * p_max², at least 1.
    """
    threshold = a * float(probs[0]) * float(probs[0])
    return max(1, int(np.count_nonzero(probs >= threshold)))


@dataclass(frozen=True, slots=True)
class TopA(Stateless):
    """Keep the tokens with p >= a * p_max².

    With weights w_i = exp((x_i - top) / T) and their sum Z, p_i = w_i / Z and
    p_max = 1 / Z: the floor on the weights is a / Z.

    Attributes:
        a: The factor, in (0, 1].
    """

    name: ClassVar[str] = "top_a"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = CUTOFF
    params: ClassVar[type[TopAParams]] = TopAParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(TopAParams)
    group_titles: ClassVar[Mapping[str, str]] = {"cutoffs": "cutoffs: top-a · tail-free · ε · η"}
    label: ClassVar[str] = "top-a"
    row_label: ClassVar[str] = "top-a"
    a: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> TopA | None:
        """Built when top_a is on (> 0)."""
        return cls(settings.of(TopAParams).top_a) if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the tokens with p >= a * p_max²."""
        cut_below_weight(candidates, self.name, self.a / kept_normaliser(candidates))
