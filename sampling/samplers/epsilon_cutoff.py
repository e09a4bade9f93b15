"""Epsilon cutoff: keep the tokens with p >= epsilon (Hewitt et al. 2022).

"Truncation Sampling as Language Model Desmoothing" (Hewitt, Manning, Liang, 2022),
as Hugging Face transformers implements it (`EpsilonLogitsWarper`,
generation/logits_process.py): softmax the scores, remove the tokens with
`probabilities < epsilon`, but never the `min_tokens_to_keep` (1) highest
(`scores < topk(scores, 1)` must hold too, so the top token and its ties stay).
epsilon is a probability in (0, 1), as in transformers' `epsilon_cutoff` (the paper
suggests 3e-4 to 9e-4); text-generation-webui writes the same setting in units of
1e-4 (its 3 is 3e-4 here). The probabilities are those of the kept set at the
temperature reached so far.
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
class EpsilonCutoffParams:
    """EpsilonCutoff's parameters, one field per setting.

    Attributes:
        epsilon_cutoff: Keep tokens with p >= epsilon (Hugging Face's `epsilon_cutoff`,
            a probability); 0.0 is off.
    """

    epsilon_cutoff: float = setting(
        SettingSpec(
            "epsilon_cutoff",
            "float",
            rank=300,
            default=0.0,
            off=0.0,
            group="cutoffs",
            label="epsilon cut",
            help="keep p >= epsilon (a probability, as Hugging Face's; 3e-4 .. 9e-4); 0 is off",
            minimum=0.0,
            maximum=1.0,
            maximum_open=True,
            slider=SliderRange(0.0, 0.01, hard_min=0.0, hard_max=0.99, fine=1e-4, coarse=1e-3),
            short_key="eps",
        )
    )


def cutoff_count(probs: npt.NDArray[np.float64], cutoff: float) -> int:
    """How many tokens a probability cutoff keeps of a distribution in descending order.

    Args:
        probs: The kept set's probabilities (summing to 1), most probable first.
        cutoff: The probability a token needs.

    Returns:
        The length of the kept prefix: the tokens with p >= cutoff, and at least the
        top token with every token tied with it.
    """
    return max(int(np.count_nonzero(probs >= cutoff)), int(np.count_nonzero(probs == probs[0])))


@dataclass(frozen=True, slots=True)
class EpsilonCutoff(Stateless):
    """Keep the tokens with p >= epsilon (the floor on the weights: epsilon * Z).

    Attributes:
        epsilon: The probability a token needs, in (0, 1).
    """

    name: ClassVar[str] = "epsilon_cutoff"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = CUTOFF
    params: ClassVar[type[EpsilonCutoffParams]] = EpsilonCutoffParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(EpsilonCutoffParams)
    group_titles: ClassVar[Mapping[str, str]] = {"cutoffs": "cutoffs: top-a · tail-free · ε · η"}
    label: ClassVar[str] = "epsilon"
    row_label: ClassVar[str] = "eps"
    epsilon: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> EpsilonCutoff | None:
        """Built when epsilon_cutoff is on (> 0)."""
        return cls(settings.of(EpsilonCutoffParams).epsilon_cutoff) if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the tokens at least epsilon probable."""
        cut_below_weight(candidates, self.name, self.epsilon * kept_normaliser(candidates))
