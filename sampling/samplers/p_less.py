"""p-less sampling: keep the tokens at least as probable as sum(p²) (Tan, Wu, Howard 2025).

"p-less Sampling: A Robust Hyperparameter-Free Approach for LLM Decoding" (arXiv
2509.23234), as llama.cpp's open pull request #26035 adds it (`p_less`): take the
probabilities of the distribution the sampler is handed, and keep the tokens whose
probability is at least the sum of their squares, sum_j p_j², the probability that
two independent draws agree. It has no parameter: a peaked distribution keeps its
head alone, a flat one keeps many tokens. The argmax is always kept:
sum_j p_j² <= p_max * sum_j p_j = p_max.

llama.cpp's pull request lowers the threshold by 1e-5 against float32 drift (a
uniform distribution would otherwise lose every token); samplescope computes in
float64 and keeps the top token (and its ties) by construction, so it takes the
threshold as it is. The probabilities are those of the kept set at the temperature
reached so far, as every filter reads them here. With the weights w_i of the kept
set and their sum Z, p_i = w_i / Z and sum p² = sum w² / Z²: the floor on the
weights is sum w² / Z.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.candidates import Candidates
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import CUTOFF, Placement
from sampling.settings.spec import SettingSpec
from sampling.weight_floor import cut_below_weight

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class PLessParams:
    """PLess's parameters, one field per setting.

    Attributes:
        p_less: p-less sampling: keep the tokens with p >= sum(p²) (no parameter).
    """

    p_less: bool = setting(
        SettingSpec(
            "p_less",
            "bool",
            default=False,
            off=False,
            group="p_less",
            label="p-less",
            help=(
                "p-less sampling: keep tokens with p >= sum(p**2), no parameter (arXiv 2509.23234)"
            ),
            choices=((False, "off"), (True, "on")),
            summary_key="p-less",
        )
    )


def p_less_threshold(probs: np.ndarray) -> float:
    """sum(p²) of a distribution (its probabilities summing to 1)."""
    return float(np.square(probs, dtype=np.float64).sum())


@dataclass(frozen=True, slots=True)
class PLess(Stateless):
    """Keep the tokens with p >= sum(p²) of the kept set's distribution."""

    name: ClassVar[str] = "p_less"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = CUTOFF
    params: ClassVar[type[PLessParams]] = PLessParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(PLessParams)
    group_titles: ClassVar[Mapping[str, str]] = {"p_less": "p-less: no parameter"}
    label: ClassVar[str] = "p-less"
    row_label: ClassVar[str] = "p-less"

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> PLess | None:
        """Built when p_less is on."""
        return cls() if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the tokens with p >= sum(p²)."""
        weights = candidates.weights()
        total = float(weights.sum())
        squares = np.multiply(weights, weights, out=candidates.scratch("p-less"))
        cut_below_weight(candidates, self.name, float(squares.sum()) / total)
