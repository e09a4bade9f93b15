"""Cuts at a probability floor: keep every token at least so probable, a prefix of the order.

Top-a, epsilon and eta cutoff each keep the tokens whose probability p_i reaches a
floor that depends on the kept set (p_max, the normaliser, the entropy). With the
weights w_i = exp((x_i - top) / T) of the kept set (w = 1 for its top token) and
their sum Z, p_i = w_i / Z: each floor becomes a floor on w_i, and the tokens above
it are a prefix of the order, found like min-p's (a band of the vocabulary a little
below the bound, sorted, then decided exactly in float64).
"""

from __future__ import annotations

import math

import numpy as np

from sampling.engine import (
    Candidates,
    Float64Array,
    scaled_gaps,
    vocabulary_weights,
    weights_of,
)
from sampling.ordering import sort_descending

_LARGEST_FLOAT32 = float(np.finfo(np.float32).max)


def kept_normaliser(candidates: Candidates) -> float:
    """Z: the sum of the kept set's weights exp((x - top) / T), at least 1."""
    if candidates.ids is None:
        logits = candidates.logits
        weights = vocabulary_weights(
            logits,
            candidates.maximum,
            candidates.temperature,
            candidates.workspace.array("filter-weights", logits.shape[0], np.float64),
        )
        return float(weights.sum())
    return float(candidates.kept_weights().sum())


def kept_normaliser_and_entropy(candidates: Candidates) -> tuple[float, float]:
    """Z and the entropy (nats) of the kept set's distribution at its temperature.

    H = log Z - sum(w_i * g_i) / Z with g_i = (x_i - top) / T; a token of weight 0
    (a -inf logit, or one far below the top) adds nothing. The products are summed
    by numpy, not a BLAS dot: a float64 dot over a vocabulary wakes BLAS's threads,
    which cost milliseconds on a busy machine.
    """
    if candidates.ids is None:
        logits = candidates.logits
        size = logits.shape[0]
        gaps = scaled_gaps(
            logits,
            candidates.maximum,
            candidates.temperature,
            None,
            candidates.workspace.array("floor-gaps", size, np.float64),
        )
        weights = np.exp(gaps, out=candidates.workspace.array("floor-weights", size, np.float64))
    else:
        gaps = scaled_gaps(
            candidates.logits, candidates.top, candidates.temperature, candidates.ids
        )
        weights = np.exp(gaps)
    total = float(weights.sum())
    with np.errstate(invalid="ignore"):  # 0 * -inf for a -inf logit: NaN, redone below
        products = np.multiply(weights, gaps, out=gaps)
    weighted = float(products.sum())
    if weighted != weighted:
        weighted = float(np.nansum(products))  # exactly the 0 * -inf products are NaN
    return total, max(0.0, math.log(total) - weighted / total)


def cut_below_weight(candidates: Candidates, name: str, floor: float) -> None:
    """Keep the tokens whose weight exp((x - top) / T) is at least `floor`.

    The floor is capped at 1: the kept set's top token (and every token tied with
    it) always stays, so at least one token is kept.

    Args:
        candidates: The step's candidates, cut in place.
        name: The cutting sampler's name, for the record.
        floor: The weight a token needs, relative to the kept top's.
    """
    floor = min(floor, 1.0)
    if not floor > 0.0:
        return
    logits = candidates.logits
    ids = candidates.ids
    if ids is not None:
        weights = candidates.kept_weights()
        keep = int(np.count_nonzero(weights >= floor))
        if keep < ids.shape[0]:
            candidates.cut(ids[:keep], name, weights=weights[:keep])
        return
    maximum = candidates.maximum
    temperature = candidates.temperature
    # w >= floor  <=>  x >= top + T ln(floor): select a little below that bound, then
    # decide exactly in float64.
    bound = maximum + temperature * math.log(floor)
    lowest = bound - 1e-3 * (1.0 + abs(bound))
    if lowest < -_LARGEST_FLOAT32 and logits.dtype == np.float32:
        lowest = -math.inf
    band = np.flatnonzero(logits >= lowest)
    ordered = sort_descending(logits, band)
    band_weights: Float64Array = weights_of(logits, maximum, temperature, ordered)
    keep = int(np.count_nonzero(band_weights >= floor))
    if keep >= logits.shape[0]:
        return
    candidates.cut(ordered[:keep], name, ordered, weights=band_weights[:keep])
