"""What the chain hands the draw, and the weights every reader takes.

`Kept` is the distribution the chain ends with (`sampling.candidates.Candidates`
builds it). The weights exp((logit - top) / T) are taken in float64, by the same
arithmetic wherever they are read, so that two readers of one token agree to the
last bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from sampling.ordering import FloatArray, IdArray

if TYPE_CHECKING:
    from sampling.records import CutBy

Float64Array = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Kept:
    """The distribution after the filters.

    Attributes:
        ids: Kept token ids in descending order, or None when the whole vocabulary
            is kept.
        probs: With `ids`, their probabilities (same order, summing to 1); without,
            the probability of every token indexed by id (a workspace buffer: valid
            until the workspace is used again).
        cut_by: The last sampler that removed tokens.
        n_kept: Tokens with a nonzero probability. Probability falls with the logit,
            so they are the first `n_kept` of `ids` (a -inf logit or an underflow at
            a low temperature counts as not kept).
        ranked: A known prefix of the order, which may run past the kept set (what
            the first cut sorted: top-k's ranking, top-p's bands); None when nothing
            was ranked.
        prefix: Whether the kept set is a prefix of the order (every cut was).
        cuts: Each cut in turn: the sampler's name, the ids it kept, and whether
            they were a prefix of the order.
        temperature: The temperature the probabilities were computed at.
        bans: Each ban (-inf logits): the banning sampler's name and the ids it banned.
        underflow_by: Who zeroed a finite logit no cut removed ("temperature", "smoothing").
    """

    ids: IdArray | None
    probs: Float64Array
    cut_by: CutBy
    n_kept: int
    ranked: IdArray | None = None
    prefix: bool = True
    cuts: tuple[Cut, ...] = ()
    temperature: float = 1.0
    bans: tuple[Ban, ...] = ()
    underflow_by: str = "temperature"


Cut = tuple[str, IdArray, bool]
"""One cut: the sampler's name, the ids it kept (in order), whether a prefix of the order."""

Ban = tuple[str, tuple[int, ...]]
"""One ban: the sampler's name and the token ids it set to -inf."""


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


# The greedy distribution's one probability, shared (read-only) by every greedy step.
_CERTAIN = np.ones(1)
_CERTAIN.flags.writeable = False


def greedy_kept(argmax: int, bans: tuple[Ban, ...] = (), cuts: tuple[Cut, ...] = ()) -> Kept:
    """The kept set at temperature 0: the argmax alone (`bans`: as `Kept.bans`; `cuts`:
    those before the argmax was taken, a grammar's)."""
    ids = np.array([argmax], dtype=np.intp)
    prefix = all(is_prefix for _, _, is_prefix in cuts)
    every = (*cuts, ("greedy", ids, True))
    return Kept(ids, _CERTAIN, "greedy", 1, None, prefix, every, 0.0, bans)
