"""Eta cutoff: keep the tokens with p >= min(epsilon, sqrt(epsilon) * exp(-H)).

"Truncation Sampling as Language Model Desmoothing" (Hewitt, Manning, Liang, 2022),
as Hugging Face transformers implements it (`EtaLogitsWarper`,
generation/logits_process.py): with H the entropy of softmax(scores),
`eta = min(epsilon, sqrt(epsilon) * exp(-entropy))`, remove the tokens with
`probabilities < eta`, but never the `min_tokens_to_keep` (1) highest (the top token
and its ties stay). A flat step (high entropy) gets a lower cutoff than a peaked
one. epsilon is a probability in (0, 1), as in transformers' `eta_cutoff` (the paper
suggests 3e-4 to 4e-3); text-generation-webui writes it in units of 1e-4. The
probabilities and the entropy are those of the kept set at the temperature reached
so far.
"""

from __future__ import annotations

import math
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
from sampling.weight_floor import cut_below_weight, kept_normaliser_and_entropy

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class EtaCutoffParams:
    """EtaCutoff's parameters, one field per setting.

    Attributes:
        eta_cutoff: Keep tokens with p >= min(eta, sqrt(eta) * exp(-entropy)) (Hugging
            Face's `eta_cutoff`); 0.0 is off.
    """

    eta_cutoff: float = setting(
        SettingSpec(
            "eta_cutoff",
            "float",
            rank=310,
            default=0.0,
            off=0.0,
            group="cutoffs",
            label="eta cut",
            help="keep p >= min(eta, sqrt(eta) * exp(-entropy)) (Hugging Face's); 0 is off",
            minimum=0.0,
            maximum=1.0,
            maximum_open=True,
            slider=SliderRange(0.0, 0.01, hard_min=0.0, hard_max=0.99, fine=1e-4, coarse=1e-3),
            short_key="eta_cut",
        )
    )


def eta(epsilon: float, entropy: float) -> float:
    """The cutoff: min(epsilon, sqrt(epsilon) * exp(-entropy))."""
    return min(epsilon, math.sqrt(epsilon) * math.exp(-entropy))


def entropy_of(probs: npt.NDArray[np.float64]) -> float:
    """Entropy in nats of a distribution (0 log 0 counted as 0)."""
    nonzero = probs[probs > 0.0]
    return float(-np.sum(nonzero * np.log(nonzero)))


@dataclass(frozen=True, slots=True)
class EtaCutoff(Stateless):
    """Keep the tokens with p >= eta (the floor on the weights: eta * Z).

    Attributes:
        epsilon: The hyperparameter eta is made from, in (0, 1).
    """

    name: ClassVar[str] = "eta_cutoff"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = CUTOFF
    params: ClassVar[type[EtaCutoffParams]] = EtaCutoffParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(EtaCutoffParams)
    group_titles: ClassVar[Mapping[str, str]] = {"cutoffs": "cutoffs: top-a · tail-free · ε · η"}
    label: ClassVar[str] = "eta"
    row_label: ClassVar[str] = "eta"
    epsilon: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> EtaCutoff | None:
        """Built when eta_cutoff is on (> 0)."""
        return cls(settings.of(EtaCutoffParams).eta_cutoff) if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the tokens at least eta probable."""
        total, entropy = kept_normaliser_and_entropy(candidates)
        cut_below_weight(candidates, self.name, eta(self.epsilon, entropy) * total)
