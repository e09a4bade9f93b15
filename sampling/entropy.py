"""The entropy of a step's distribution and its normaliser, for the record.

Both are shown, never drawn from: computed at the logits' own precision over the
whole vocabulary, in one scratch buffer.
"""

from __future__ import annotations

import math

import numpy as np

from sampling.ordering import FloatArray
from sampling.workspace import Workspace


def entropy_and_normaliser(
    logits: FloatArray, maximum: float, workspace: Workspace
) -> tuple[float, float]:
    """Entropy (nats) of softmax(logits) and its normaliser sum(exp(x - max)).

    Computed at the logits' own precision (float32 for a model's logits): these
    figures are shown, never drawn from. The exponentials are taken in place in one
    scratch buffer. Logits far from zero (a maximum beyond ±1e4, as extreme
    penalties or hostile input give) take a float64 path that never forms
    sum(e * x), which would overflow or lose every digit to cancellation.
    """
    if abs(maximum) > _FAST_ENTROPY_LIMIT:
        return _entropy_far_from_zero(logits, maximum)
    exps = workspace.array("exps", logits.shape[0], logits.dtype)
    # exp(x - max) = exp(x) * exp(-max): within these bounds exp(x) neither overflows
    # (nor do the sums below, over a vocabulary of up to a million tokens) nor drops
    # a token that matters, and the subtraction's pass over the vocabulary is saved.
    unshifted = _UNSHIFTED_LOWEST <= maximum <= _UNSHIFTED_HIGHEST
    shift = 0.0 if unshifted else maximum
    if unshifted:
        np.exp(logits, out=exps)
    else:
        np.exp(np.subtract(logits, maximum, out=exps), out=exps)
    # A BLAS dot with ones sums twice as fast as numpy's pairwise sum.
    total = float(np.dot(exps, workspace.ones(exps.shape[0], exps.dtype)))
    # sum(e * (x - shift)) = sum(e * x) - shift * sum(e); a -inf logit gives 0 * -inf
    # (NaN, checked below), so numpy's "invalid" warning is off.
    with np.errstate(invalid="ignore"):
        weighted = float(np.dot(exps, logits)) - shift * total
    if weighted != weighted:
        # Tokens with a -inf logit add nothing to the entropy: at the lowest finite
        # value instead, their weight 0 gives a product of 0, not NaN.
        floor = _LOWEST_FINITE[0] if logits.dtype == np.float32 else _LOWEST_FINITE[1]
        clamped = workspace.array("clamped", logits.shape[0], logits.dtype)
        np.maximum(logits, floor, out=clamped)
        weighted = float(np.dot(exps, clamped)) - shift * total
    normaliser = total * math.exp(shift - maximum)
    # Rounding can take a near-one-hot distribution's entropy a hair below zero.
    return max(0.0, math.log(total) - weighted / total), normaliser


_LOWEST_FINITE = (float(np.finfo(np.float32).min), float(np.finfo(np.float64).min))

# The maxima for which `entropy_and_normaliser` takes exp(x) unshifted.
_UNSHIFTED_LOWEST = -40.0
_UNSHIFTED_HIGHEST = 60.0


_FAST_ENTROPY_LIMIT = 1e4
"""Largest |maximum| for which sum(e * x) - max * sum(e) keeps its digits."""


def _entropy_far_from_zero(logits: FloatArray, maximum: float) -> tuple[float, float]:
    """`entropy_and_normaliser` from the shifted logits, in float64.

    A gap wider than float64's range (1.7e308 next to -1.7e308) becomes -inf, whose
    weight is 0: such a token adds nothing.
    """
    with np.errstate(over="ignore"):
        shifted = logits.astype(np.float64) - maximum
    exps = np.exp(shifted)
    normaliser = float(exps.sum())
    weighing = exps > 0
    weighted = float(np.dot(exps[weighing], shifted[weighing]))
    return max(0.0, math.log(normaliser) - weighted / normaliser), normaliser
