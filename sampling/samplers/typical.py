"""Locally typical sampling (llama.cpp's `typ_p`): keep the tokens whose surprise is
nearest the entropy, up to mass p. The kept set need not be a prefix of the order."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt

from sampling.candidates import Candidates
from sampling.ordering import stable_argsort
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import IN_ORDER, Placement
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class TypicalParams:
    """Typical's parameters, one field per setting.

    Attributes:
        typical_p: Locally typical sampling's mass (llama.cpp `typ_p`); 1.0 is off.
    """

    typical_p: float = setting(
        SettingSpec(
            "typical_p",
            "float",
            rank=140,
            default=1.0,
            off=1.0,
            group="typical",
            label="typical-p",
            help="locally typical: keep the tokens nearest the entropy up to mass p; 1 is off",
            minimum=0.0,
            maximum=1.0,
            slider=SliderRange(0.0, 1.0, hard_min=0.0, hard_max=1.0, fine=0.01, coarse=0.05),
            short_key="typ",
        )
    )


@dataclass(frozen=True, slots=True)
class Typical(Stateless):
    """Locally typical sampling: keep the tokens whose surprise is nearest the entropy.

    Attributes:
        p: The mass to keep, in [0, 1).
    """

    name: ClassVar[str] = "typ_p"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = IN_ORDER
    params: ClassVar[type[TypicalParams]] = TypicalParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(TypicalParams)
    group_titles: ClassVar[Mapping[str, str]] = {"typical": "typical-p · top-n-σ"}
    label: ClassVar[str] = "typical"
    row_label: ClassVar[str] = "typ-p"
    p: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Typical | None:
        """Built when typical_p is on (< 1)."""
        return cls(settings.of(TypicalParams).typical_p) if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Keep the most typical tokens until their mass exceeds p."""
        if candidates.size < 2:
            return
        probs, scores = _typicality(
            candidates.gaps("typical-gaps"), candidates.scratch("typical-probs")
        )
        best = int(np.argmin(scores))
        if probs[best] > self.p and int(np.count_nonzero(scores == scores[best])) == 1:
            # A peaked step: the most typical token alone exceeds p; no sort needed.
            # (Tied scores are ordered by logit, which this shortcut does not read.)
            kept = np.array([candidates.token_at(best)], dtype=np.intp)
            candidates.cut(kept, self.name, prefix=False)
            return
        ids, (probs, scores) = candidates.in_order(probs, scores)
        by_typicality = stable_argsort(scores)
        cumulative = np.cumsum(probs[by_typicality])
        keep = int(np.searchsorted(cumulative, self.p, side="right")) + 1
        if keep < ids.shape[0]:
            candidates.cut(ids[np.sort(by_typicality[:keep])], self.name, prefix=False)


def _typicality(
    gaps: npt.NDArray[np.float64], probs: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The probabilities and typicality scores |surprise - entropy| of some tokens.

    `gaps` are (logit - top) / T; they are overwritten by the scores, and `probs`
    (of the same length) receives the probabilities: large temporaries cost page
    faults. A token's surprise -log p is log Z - gap, with no logarithm per token;
    one of probability 0 (or a -inf logit) scores above every other.
    """
    np.exp(gaps, out=probs)
    total = float(probs.sum())
    probs /= total
    surprise = np.subtract(math.log(total), gaps, out=gaps)
    with np.errstate(invalid="ignore"):  # 0 * inf for a -inf logit: NaN, redone below
        entropy = float(np.dot(probs, surprise))
    if entropy != entropy:
        entropy = float(np.dot(probs, np.where(probs > 0.0, surprise, 0.0)))
    surprise -= entropy
    return probs, np.abs(surprise, out=surprise)
