"""Cuts at a probability floor: keep every token at least so probable, a prefix of the order.

Top-a, epsilon and eta cutoff each keep the tokens whose probability p_i reaches a
floor that depends on the kept set (p_max, the normaliser, the entropy). With the
weights w_i = exp((x_i - top) / T) of the kept set (w = 1 for its top token) and
their sum Z, p_i = w_i / Z: each floor becomes a floor on w_i, a weight ratio to
the top, which `Candidates.weights_at_least` answers (as for min-p).
"""

from __future__ import annotations

import math

import numpy as np

from sampling.candidates import Candidates


def kept_normaliser(candidates: Candidates) -> float:
    """Z: the sum of the kept set's weights exp((x - top) / T), at least 1."""
    return float(candidates.weights().sum())


def kept_normaliser_and_entropy(candidates: Candidates) -> tuple[float, float]:
    """Z and the entropy (nats) of the kept set's distribution at its temperature.

    H = log Z - sum(w_i * g_i) / Z with g_i = (x_i - top) / T; a token of weight 0
    (a -inf logit, or one far below the top) adds nothing. The products are summed
    by numpy, not a BLAS dot: a float64 dot over a vocabulary wakes BLAS's threads,
    which cost milliseconds on a busy machine.
    """
    gaps = candidates.gaps("floor-gaps")
    weights = np.exp(gaps, out=candidates.scratch("floor-weights"))
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
    found = candidates.weights_at_least(floor)
    if found is not None:
        kept, ranked, weights = found
        candidates.cut(kept, name, ranked, weights=weights)
