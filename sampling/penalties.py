"""Repeat, frequency and presence penalties over the last-n window."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from sampling.errors import LogitsError
from sampling.settings import SamplerSettings

History = Sequence[int] | npt.NDArray[np.integer]


def penalty_window(history: History, settings: SamplerSettings) -> npt.NDArray[np.int64]:
    """The last `repeat_last_n` token ids of `history` as an int64 array."""
    if settings.repeat_last_n == 0 or len(history) == 0:
        return np.empty(0, dtype=np.int64)
    window = history[-settings.repeat_last_n :]
    return np.asarray(window, dtype=np.int64)


def penalized_logits(
    logits: npt.NDArray[np.floating], settings: SamplerSettings, history: History
) -> npt.NDArray[np.floating]:
    """The logits after the penalties, as a new array (the input is never changed).

    Every distinct token of the window is penalised once by `repeat_penalty` (a
    positive logit divided, a non-positive one multiplied, as llama.cpp and candle
    do), then `count * frequency_penalty + presence_penalty` is subtracted.
    Returns `logits` itself when no penalty applies.

    Raises:
        LogitsError: A history token id lies outside the vocabulary.
    """
    if not settings.penalizes:
        return logits
    window = penalty_window(history, settings)
    if window.size == 0:
        return logits
    token_ids, counts = np.unique(window, return_counts=True)
    if token_ids[0] < 0 or token_ids[-1] >= logits.shape[0]:
        bad = int(token_ids[0] if token_ids[0] < 0 else token_ids[-1])
        raise LogitsError(
            f"history token id {bad} is outside the vocabulary of {logits.shape[0]} tokens"
        )
    penalized = logits.copy()
    values = penalized[token_ids].astype(np.float64)
    if settings.repeat_penalty != 1.0:
        values = np.where(
            values > 0, values / settings.repeat_penalty, values * settings.repeat_penalty
        )
    values -= counts * settings.frequency_penalty + settings.presence_penalty
    penalized[token_ids] = values
    return penalized
