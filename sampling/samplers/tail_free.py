"""Tail-free sampling: cut where the sorted distribution's curve flattens (`tfs_z`).

KoboldCpp's `sample_tail_free` (gpttype_adapter.cpp; llama.cpp's own until it
dropped the sampler): with the kept set's probabilities p_0 >= p_1 >= ... in
descending order, the second differences d_i = |(p_i - p_{i+1}) - (p_{i+1} -
p_{i+2})| for i = 0 .. n-3, normalised to sum to 1 (all equal to 1/(n-2) when their
sum is at most 1e-6); the kept set is the first i tokens for the first i >= 1
(`min_keep` 1) at which the running sum of the d's exceeds z. z >= 1, or at most
two tokens, keeps everything. The probabilities are those of the kept set at the
temperature reached so far. Over a whole vocabulary the head alone decides unless
its cut lies within the tail's bound of z (then all of it is sorted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt

from sampling.candidates import Candidates
from sampling.ordering import IdArray, descending_bands
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import CUTOFF, Placement
from sampling.settings.spec import SettingSpec, SliderRange
from sampling.weights import vocabulary_weights, weights_of

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class TailFreeParams:
    """TailFree's parameters, one field per setting.

    Attributes:
        tfs: Tail-free sampling's z (KoboldCpp's `tfs`); 1.0 is off.
    """

    tfs: float = setting(
        SettingSpec(
            "tfs",
            "float",
            rank=290,
            default=1.0,
            off=1.0,
            group="cutoffs",
            label="tail-free z",
            help="tail-free sampling: keep the head up to where the curve flattens; 1 is off",
            minimum=0.0,
            maximum=1.0,
            slider=SliderRange(0.0, 1.0, hard_min=0.0, hard_max=1.0, fine=0.01, coarse=0.05),
        )
    )


_FLAT_CURVE = 1e-6
"""At most this much total curvature: the second differences count as equal."""


def tail_free_count(probs: npt.NDArray[np.float64], z: float) -> int:
    """How many tokens tail-free sampling keeps of a distribution in descending order.

    Args:
        probs: The kept set's probabilities (summing to 1), most probable first.
        z: The share of the curvature to keep, in (0, 1).

    Returns:
        The length of the kept prefix, at least 1.
    """
    size = int(probs.shape[0])
    if z >= 1.0 or size <= 2:
        return size
    first = probs[:-1] - probs[1:]
    second = np.abs(first[:-1] - first[1:])
    total = float(second.sum())
    if total > _FLAT_CURVE:
        second /= total
    else:
        second = np.full(second.shape[0], 1.0 / second.shape[0])
    cumulative = np.cumsum(second)
    # The first i >= 1 with cumulative[i] > z keeps i tokens; none keeps them all.
    above = np.flatnonzero(cumulative[1:] > z)
    return int(above[0]) + 1 if above.size else size


def head_count(head: npt.NDArray[np.float64], z: float) -> int | None:
    """`tail_free_count` of a whole distribution read off its head, when the tail is moot.

    The second differences d_i of the first m probabilities are exact for i <= m - 3;
    those from m - 2 on sum to at most 2 * p_{m-2} (each |d_i| is at most the sum of
    two first differences, which telescope). So the total lies in [H, H + 2 p_{m-2}],
    H the head's sum, and the cut is decided when the first i >= 1 whose running sum
    passes z * H also passes z * (H + 2 p_{m-2}).

    Args:
        head: The m most probable tokens' probabilities (of the whole distribution),
            in descending order; every other token is at most as probable as the last.
        z: The share of the curvature to keep, in (0, 1).

    Returns:
        The kept prefix's length, or None when the tail could change it.
    """
    size = head.shape[0]
    if size < 5:
        return None
    first = head[:-1] - head[1:]
    second = np.abs(first[:-1] - first[1:])
    low = float(second.sum())
    high = low + 2.0 * float(head[size - 2])
    if low <= _FLAT_CURVE:
        return None
    cumulative = np.cumsum(second)
    surely = np.flatnonzero(cumulative[1:] > z * high)
    maybe = np.flatnonzero(cumulative[1:] > z * low)
    if surely.size == 0 or maybe.size == 0 or surely[0] != maybe[0]:
        return None
    return int(surely[0]) + 1


@dataclass(frozen=True, slots=True)
class TailFree(Stateless):
    """Keep the head of the order up to where its curvature's running share passes z.

    Attributes:
        z: The share, in (0, 1).
    """

    name: ClassVar[str] = "tfs"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = CUTOFF
    params: ClassVar[type[TailFreeParams]] = TailFreeParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(TailFreeParams)
    group_titles: ClassVar[Mapping[str, str]] = {"cutoffs": "cutoffs: top-a · tail-free · ε · η"}
    label: ClassVar[str] = "tfs"
    row_label: ClassVar[str] = "tfs"
    z: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> TailFree | None:
        """Built when tfs is on (< 1)."""
        return cls(settings.of(TailFreeParams).tfs) if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set where the tail begins."""
        if candidates.ids is not None:
            ids = candidates.ids
            weights = candidates.kept_weights()
            probs = weights / float(weights.sum())
            keep = tail_free_count(probs, self.z)
            if keep < ids.shape[0]:
                candidates.cut(ids[:keep], self.name, weights=weights[:keep])
            return
        logits = candidates.logits
        maximum = candidates.maximum
        temperature = candidates.temperature
        # Most of a real vocabulary lies far below the top: decide from the head (the
        # bands of the order within 6, 12, 24, 48 T of the top, one more at a time)
        # when the tail cannot change the cut (see `head_count`), else sort it all.
        total = 0.0
        bands: list[IdArray] = []
        reached = 0
        for band in descending_bands(logits, maximum, temperature):
            reached += band.shape[0]
            if reached >= logits.shape[0]:
                break
            if not total:
                buffer = candidates.workspace.array("filter-weights", logits.shape[0], np.float64)
                total = float(vocabulary_weights(logits, maximum, temperature, buffer).sum())
            bands.append(band)
            ordered = bands[0] if len(bands) == 1 else np.concatenate(bands)
            weights = weights_of(logits, maximum, temperature, ordered)
            head = head_count(weights / total, self.z)
            if head is not None:
                candidates.cut(ordered[:head], self.name, ordered, weights=weights[:head])
                return
        ordered = candidates.ordered()
        weights = weights_of(logits, maximum, temperature, ordered)
        keep = tail_free_count(weights / float(weights.sum()), self.z)
        if keep < ordered.shape[0]:
            candidates.cut(ordered[:keep], self.name, ordered, weights=weights[:keep])
