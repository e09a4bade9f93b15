"""The weights every reader of the logits takes: exp((logit - top) / T).

They are taken in float64, by the same arithmetic wherever they are read, so that two
readers of one token agree to the last bit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from sampling.ordering import FloatArray, IdArray

Float64Array = npt.NDArray[np.float64]


def weights_of(
    logits: FloatArray, maximum: float, temperature: float, token_ids: IdArray
) -> Float64Array:
    """exp((logit - max) / temperature) in float64 for some token ids."""
    shifted = logits[token_ids].astype(np.float64)
    shifted -= maximum
    if temperature != 1.0:
        divide_by_temperature(shifted, temperature, logits.dtype)
    return np.exp(shifted, out=shifted)


def vocabulary_weights(
    logits: FloatArray, maximum: float, temperature: float, out: Float64Array
) -> Float64Array:
    """exp((logit - max) / temperature) in float64 for the whole vocabulary, into `out`."""
    np.copyto(out, logits)  # widen first: float32 - float would round in float32
    out -= maximum
    if temperature != 1.0:
        divide_by_temperature(out, temperature, logits.dtype)
    return np.exp(out, out=out)


def scaled_gaps(
    logits: FloatArray,
    top: float,
    temperature: float,
    token_ids: IdArray | None,
    out: Float64Array | None = None,
) -> Float64Array:
    """(logit - top) / temperature in float64: the exponent of `weights_of`.

    Args:
        logits: The logits.
        top: The logit the gaps are taken from.
        temperature: The temperature.
        token_ids: Which tokens (in that order); None for the whole vocabulary by id.
        out: For the whole vocabulary, the array to write into.
    """
    if token_ids is None:
        gaps = np.empty(logits.shape[0]) if out is None else out
        np.copyto(gaps, logits)  # widen first: float32 - float would round in float32
    else:
        gaps = logits[token_ids].astype(np.float64)
    gaps -= top
    if temperature != 1.0:
        divide_by_temperature(gaps, temperature, logits.dtype)
    return gaps


_LARGEST_FLOAT64 = float(np.finfo(np.float64).max)
# The widest gap between two finite float32 logits, which float64 holds exactly.
_FLOAT32_SPAN = 2.0 * float(np.finfo(np.float32).max)


def divide_by_temperature(gaps: Float64Array, temperature: float, source: np.dtype[Any]) -> None:
    """gaps /= temperature, in place; a quotient past float64's range becomes -inf.

    Gaps between float32 logits are at most 6.8e38: dividing them overflows only
    below a temperature of about 4e-270, so the common case skips numpy's error-state
    switch (which costs more than the division). Gaps between float64 logits can
    overflow at any temperature below 1.
    """
    span = _FLOAT32_SPAN if source == np.float32 else math.inf
    if temperature * _LARGEST_FLOAT64 >= span:
        gaps /= temperature
    else:
        with np.errstate(over="ignore"):  # a gap past float64 at a low T: weight 0
            gaps /= temperature
