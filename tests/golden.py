"""Hand-computed references for the sampler's golden tables (seed 000's six logits)."""

from __future__ import annotations

import math
from collections.abc import Sequence

LOGITS = [2.0, 1.5, 1.0, 0.5, 0.0, -1.0]
TOL = 1e-12


def softmax(values: Sequence[float], temperature: float = 1.0) -> list[float]:
    """Softmax by hand: exp((x - max) / T) / sum."""
    top = max(values)
    exps = [math.exp((v - top) / temperature) for v in values]
    total = math.fsum(exps)
    return [e / total for e in exps]


def renormalised(probs: list[float], kept: list[int]) -> list[float]:
    """Zero every token not in `kept`, rescale the kept ones to sum to 1."""
    total = math.fsum(probs[i] for i in kept)
    return [probs[i] / total if i in kept else 0.0 for i in range(len(probs))]
