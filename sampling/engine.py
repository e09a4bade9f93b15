"""The filter chain: from penalised logits to the distribution a token is drawn from.

Order (temperature first, candle and Hugging Face): temperature → top-k → top-p →
min-p. With `temperature_last` (llama.cpp's default) the filters read the
distribution at temperature 1 and the temperature shapes only what they kept.

Every filter keeps a prefix of the same order (descending logit, ties by lower id),
so the kept set is always the first `n_kept` tokens of that order. It is held as
sorted ids when something was cut, or as "the whole vocabulary" when nothing was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sampling.ordering import FloatArray, IdArray, prefix_reaching, sort_descending, top_ids
from sampling.records import CutBy
from sampling.settings import SamplerSettings
from sampling.workspace import Workspace

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
        cut_by: The last filter that removed tokens.
        n_kept: Tokens with a nonzero probability. Probability falls with the logit,
            so they are the first `n_kept` of the order (a -inf logit or an
            underflow at a low temperature counts as not kept).
        ranked: The longest known prefix of the order (top-k's ranking), which may
            run past the kept set; None when no ranking was needed.
    """

    ids: IdArray | None
    probs: Float64Array
    cut_by: CutBy
    n_kept: int
    ranked: IdArray | None = None


def weights_of(
    logits: FloatArray, maximum: float, temperature: float, token_ids: IdArray
) -> Float64Array:
    """exp((logit - max) / temperature) in float64 for some token ids."""
    shifted = logits[token_ids].astype(np.float64)
    shifted -= maximum
    if temperature != 1.0:
        shifted /= temperature
    return np.exp(shifted, out=shifted)


def vocabulary_weights(
    logits: FloatArray, maximum: float, temperature: float, out: Float64Array
) -> Float64Array:
    """exp((logit - max) / temperature) in float64 for the whole vocabulary, into `out`."""
    np.copyto(out, logits)  # widen first: float32 - float would round in float32
    out -= maximum
    if temperature != 1.0:
        out /= temperature
    return np.exp(out, out=out)


def greedy_kept(argmax: int) -> Kept:
    """The kept set at temperature 0: the argmax alone."""
    return Kept(np.array([argmax], dtype=np.intp), np.ones(1), "greedy", 1, None)


def filtered(
    logits: FloatArray, maximum: float, settings: SamplerSettings, workspace: Workspace
) -> Kept:
    """Apply top-k, top-p and min-p and shape the survivors by the temperature.

    Args:
        logits: Penalised, checked logits.
        maximum: Their (finite) maximum.
        settings: The sampler's settings (temperature > 0).
        workspace: Scratch buffers.
    """
    vocab_size = logits.shape[0]
    temperature = settings.temperature
    filter_temperature = 1.0 if settings.temperature_last else temperature
    ids: IdArray | None = None
    ranked: IdArray | None = None
    cut_by: CutBy = "none"

    if 0 < settings.top_k < vocab_size:
        ids = top_ids(logits, settings.top_k)
        ranked = ids
        cut_by = "top_k"
    if settings.top_p < 1.0:
        ids, cut = _top_p(logits, maximum, filter_temperature, ids, settings, workspace)
        if cut:
            cut_by = "top_p"
    if settings.min_p > 0.0:
        ids, cut = _min_p(logits, maximum, filter_temperature, ids, settings.min_p)
        if cut:
            cut_by = "min_p"

    if ids is None:
        weights = vocabulary_weights(
            logits, maximum, temperature, workspace.array("weights", vocab_size, np.float64)
        )
    else:
        weights = weights_of(logits, maximum, temperature, ids)
    weights /= weights.sum()
    return Kept(ids, weights, cut_by, int(np.count_nonzero(weights)), ranked)


def _top_p(
    logits: FloatArray,
    maximum: float,
    temperature: float,
    ids: IdArray | None,
    settings: SamplerSettings,
    workspace: Workspace,
) -> tuple[IdArray | None, bool]:
    """Keep the shortest prefix whose mass reaches top_p (the crossing token kept)."""
    top_p = settings.top_p
    if ids is None or settings.top_p_scope == "vocab":
        all_weights = vocabulary_weights(
            logits,
            maximum,
            temperature,
            workspace.array("filter-weights", logits.shape[0], np.float64),
        )
        total = float(all_weights.sum())
    if ids is None:
        prefix = prefix_reaching(logits, maximum, temperature, all_weights, top_p * total)
        if prefix.size >= logits.shape[0]:
            return None, False
        return prefix, True
    weights = weights_of(logits, maximum, temperature, ids)
    if settings.top_p_scope == "vocab":
        # candle's TopKThenTopP: p against the whole vocabulary's mass.
        if top_p >= float(weights.sum()) / total:
            return ids, False
    else:
        total = float(weights.sum())
    cumulative = np.cumsum(weights)
    cumulative /= total
    keep = int(np.searchsorted(cumulative, top_p, side="left")) + 1
    if keep >= ids.size:
        return ids, False
    return ids[:keep], True


def _min_p(
    logits: FloatArray,
    maximum: float,
    temperature: float,
    ids: IdArray | None,
    min_p: float,
) -> tuple[IdArray | None, bool]:
    """Keep tokens with p >= min_p * p_max (a prefix: the order is by probability)."""
    whole_vocabulary = ids is None
    if ids is None:
        # p_i / p_max = exp((x_i - max) / T) >= min_p  <=>  x_i >= max + T ln(min_p);
        # select a little below that bound, then decide exactly in float64.
        bound = maximum + temperature * math.log(min_p)
        band = np.flatnonzero(logits >= bound - 1e-3 * (1.0 + abs(bound)))
        ids = sort_descending(logits, band)
    ratios = weights_of(logits, maximum, temperature, ids)
    keep = int(np.count_nonzero(ratios >= min_p))
    if keep >= logits.shape[0]:
        return None, False
    if keep >= ids.size and not whole_vocabulary:
        return ids, False
    return ids[:keep], True


def entropy_and_normaliser(
    logits: FloatArray, maximum: float, workspace: Workspace
) -> tuple[float, float]:
    """Entropy (nats) of softmax(logits) and its normaliser sum(exp(x - max)).

    Computed at the logits' own precision (float32 for a model's logits): these
    figures are shown, never drawn from. The exponentials are taken in place in one
    scratch buffer.
    """
    exps = np.subtract(logits, maximum, out=workspace.array("exps", logits.shape[0], logits.dtype))
    np.exp(exps, out=exps)
    # A BLAS dot with ones sums twice as fast as numpy's pairwise sum.
    normaliser = float(np.dot(exps, workspace.ones(exps.shape[0], exps.dtype)))
    with np.errstate(invalid="ignore"):
        # sum(e * (x - max)) = sum(e * x) - max * sum(e)
        weighted = float(np.dot(exps, logits)) - maximum * normaliser
    if weighted != weighted:
        # A -inf logit gives 0 * -inf; such tokens add nothing to the entropy.
        finite = np.isfinite(logits)
        weighted = float(np.dot(exps[finite], logits[finite])) - maximum * normaliser
    # Rounding can take a near-one-hot distribution's entropy a hair below zero.
    return max(0.0, math.log(normaliser) - weighted / normaliser), normaliser
