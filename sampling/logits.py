"""A step's input: checking logits before sampling, with errors that say what is wrong
with them, and the history it reads."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from sampling.errors import LogitsError

FloatArray = npt.NDArray[np.floating[Any]]

History = Sequence[int] | npt.NDArray[np.integer]
"""The token ids so far, prompt included, that a step reads (the penalties, DRY, a
grammar)."""


def checked_logits(logits: object, vocab_size: int | None = None) -> tuple[FloatArray, float, int]:
    """Validate logits and return them with their maximum and its (first) index.

    The array is returned as it is when it is already float32 or float64 (no copy);
    other numeric types are converted to float64. +inf logits count as the argmax:
    they are replaced (in a new array) by 0 and every other logit by -inf. float64
    logits spread wider than float64 can subtract are narrowed (in a new array)
    without changing any probability (see `within_float64_span`).

    Args:
        logits: One score per vocabulary token.
        vocab_size: When given, the length the logits must have.

    Returns:
        The logits as a float array, their (finite) maximum and its lowest index.

    Raises:
        LogitsError: Wrong rank, wrong length, non-numeric, empty, NaN, or no finite
            value.
    """
    array = np.asarray(logits)
    if array.ndim != 1:
        hint = " (drop the batch axis, e.g. logits[0])" if array.ndim == 2 else ""
        raise LogitsError(
            f"logits must be one-dimensional, one score per vocabulary token; "
            f"got an array of shape {array.shape}{hint}"
        )
    if array.shape[0] == 0:
        raise LogitsError("logits are empty: expected one score per vocabulary token")
    if vocab_size is not None and array.shape[0] != vocab_size:
        raise LogitsError(
            f"logits have {array.shape[0]} scores but the vocabulary has {vocab_size} tokens"
        )
    if array.dtype != np.float32 and array.dtype != np.float64:
        if array.dtype.kind not in "fiub":
            raise LogitsError(f"logits must be numbers, got an array of dtype {array.dtype}")
        array = array.astype(np.float64)
    # argmax stops at the first NaN, so one pass finds the maximum and any NaN.
    argmax = int(np.argmax(array))
    maximum = float(array[argmax])
    if maximum != maximum:
        first_nan = int(np.flatnonzero(np.isnan(array))[0])
        raise LogitsError(f"logits contain NaN (first at token id {first_nan})")
    if maximum == -np.inf:
        raise LogitsError(f"logits have no finite value: all {array.shape[0]} are -inf")
    if maximum == np.inf:
        array = np.where(np.isposinf(array), 0.0, -np.inf).astype(array.dtype)
        maximum = 0.0
    elif array.dtype == np.float64:
        array = within_float64_span(array, maximum)
    return array, maximum, argmax


_HALF_FLOAT64_RANGE = float(np.finfo(np.float64).max) / 2


def within_float64_span(array: FloatArray, maximum: float) -> FloatArray:
    """The logits, with finite ones too far below the maximum to subtract it raised.

    float64 logits can lie further apart than float64 reaches (1.7e308 and
    -1.7e308): `logit - maximum` would overflow. A logit more than half the range
    below the maximum has probability exactly 0 either way, so it is raised (in a
    new array) to that floor, where the subtraction is exact enough. float32
    logits always fit: their differences are taken in float64.
    """
    lowest = float(np.min(array))
    if math.isfinite(maximum - lowest):
        return array
    floor = maximum - _HALF_FLOAT64_RANGE
    return np.where(np.isneginf(array), array, np.maximum(array, floor))
