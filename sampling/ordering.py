"""The vocabulary in descending order of probability, without sorting all of it.

Every filter keeps a prefix of one order: descending logit, ties broken by the lower
token id. Real next-token distributions are peaked, so the prefix that matters is
short. The top-N come from a threshold read off group maxima; a top-p prefix from
bands below the maximum (each sorted on its own, visited from the top down); a draw
from the head band, or else a histogram of the mass over logit buckets.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from sampling.workspace import Workspace

FloatArray = npt.NDArray[np.floating[Any]]
IdArray = npt.NDArray[np.intp]

# Band edges below the maximum, in units of the temperature the order is read at.
_BAND_EDGES = (6.0, 12.0, 24.0, 48.0)
# top_ids splits the vocabulary into this many interleaved groups.
_GROUPS = 64
# Above this size, partition before sorting.
_PARTITION_ABOVE = 2048


def sort_descending(logits: FloatArray, token_ids: IdArray) -> IdArray:
    """`token_ids` (ascending) ordered by descending logit, ties by lower id."""
    values = logits[token_ids]
    if token_ids.shape[0] > _KEYED_SORT_ABOVE and values.dtype == np.float32:
        return _keyed_sort(values, token_ids)
    order = np.argsort(-values, kind="stable")
    result: IdArray = token_ids[order]
    return result


# Above this many ids, `sort_descending` sorts one int64 key per token (numpy's SIMD
# sort) instead of a stable argsort of the logits (a merge sort): four times faster
# on a whole vocabulary, slower on a short band.
_KEYED_SORT_ABOVE = 2048


def _keyed_sort(values: npt.NDArray[np.float32], token_ids: IdArray) -> IdArray:
    """`sort_descending` for float32 logits, by a plain sort of one key per token.

    The key's high half orders the logits: a float32's bits read as an int32 keep
    its order once a negative one's magnitude bits are flipped, and negating that
    makes the order descending. The low half is the id, so equal logits keep the
    lower id first. `values` (a fresh gather) is overwritten.
    """
    values += np.float32(0.0)  # -0.0 becomes 0.0: equal logits must tie
    bits = values.view(np.int32).astype(np.int64)
    np.bitwise_xor(bits, 0x7FFFFFFF, out=bits, where=bits < 0)
    keys = np.negative(bits, out=bits)
    keys <<= 32
    keys |= token_ids
    keys.sort()
    keys &= 0xFFFFFFFF
    result: IdArray = keys.astype(np.intp, copy=False)
    return result


def stable_argsort(values: npt.NDArray[np.float64]) -> IdArray:
    """`np.argsort(values, kind="stable")` (no NaN), faster on long arrays.

    numpy's stable sort of floats is a merge sort; its default sort is a SIMD
    quicksort, which breaks ties in no set order. Sorted by the latter, every run
    of equal values is put back in position order by one int64 sort of
    (run, position) keys.
    """
    size = values.shape[0]
    if size <= _KEYED_SORT_ABOVE:
        stable: IdArray = np.argsort(values, kind="stable")
        return stable
    order: IdArray = np.argsort(values)
    ordered = values[order]
    starts = np.empty(size, dtype=bool)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    if starts.all():
        return order
    keys = np.cumsum(starts)
    keys -= 1
    keys *= size
    keys += order
    keys.sort()
    keys %= size
    result: IdArray = keys.astype(np.intp, copy=False)
    return result


def top_ids(logits: FloatArray, count: int) -> IdArray:
    """The `count` highest-logit token ids in descending order (ties: lower id first).

    One pass finds a threshold: split the vocabulary into groups, take each group's
    maximum; the count-th largest group maximum is at most the count-th largest
    logit (count groups each hold a logit at least that large). Only the tokens at
    or above it (on real logits, barely more than `count`) are sorted.
    """
    vocab_size = logits.shape[0]
    if count >= vocab_size:
        return sort_descending(logits, np.arange(vocab_size))
    usable = vocab_size - vocab_size % _GROUPS
    if usable // _GROUPS >= 4 * count:
        group_maxima = logits[:usable].reshape(_GROUPS, -1).max(axis=0)
        if usable < vocab_size:
            group_maxima = np.concatenate([group_maxima, logits[usable:]])
        threshold = np.partition(group_maxima, group_maxima.size - count)[group_maxima.size - count]
    else:
        threshold = np.partition(logits, vocab_size - count)[vocab_size - count]
    band = np.flatnonzero(logits >= threshold)
    if band.size > _PARTITION_ABOVE and band.size > 4 * count:
        # Many ties at the threshold (a flat distribution): narrow before sorting.
        values = logits[band]
        exact = np.partition(values, values.size - count)[values.size - count]
        band = band[values >= exact]
    result: IdArray = sort_descending(logits, band)[:count]
    return result


def descending_bands(logits: FloatArray, maximum: float, temperature: float) -> Iterator[IdArray]:
    """Every token id, as successive bands each in descending order, from the top.

    Concatenated, the bands are the whole vocabulary in descending order.
    """
    upper = np.inf
    for edge in _BAND_EDGES:
        lower = edge_below(logits, maximum - edge * temperature)
        mask = logits >= lower
        if upper != np.inf:
            mask &= logits < upper
        band = np.flatnonzero(mask)
        if band.size:
            yield sort_descending(logits, band)
        upper = lower
    band = np.flatnonzero(~(logits >= upper))
    if band.size:
        yield sort_descending(logits, band)


_LOWEST_FLOAT32 = float(np.finfo(np.float32).min)


def edge_below(logits: FloatArray, edge: float) -> float:
    """`edge` as float32 logits compare with it: -inf when it lies below float32's range.

    (numpy would round it to -inf there too, with an overflow warning.)
    """
    if edge < _LOWEST_FLOAT32 and logits.dtype == np.float32:
        return -np.inf
    return edge


def prefix_reaching(
    logits: FloatArray,
    maximum: float,
    temperature: float,
    weights: npt.NDArray[np.float64],
    target: float,
) -> tuple[IdArray, IdArray]:
    """The shortest descending prefix whose cumulative weight reaches `target` (top-p).

    Args:
        logits: The (penalised) logits.
        maximum: Their maximum.
        temperature: Scales the band edges (a higher temperature spreads the mass).
        weights: Every token's weight, indexed by id.
        target: The cumulative weight to reach (the crossing token is included).

    Returns:
        The prefix's ids in order (the whole vocabulary when it does not reach the
        target: rounding), and the bands sorted on the way: a longer prefix of the
        order, which the step's record reuses for its top-N.
    """
    bands: list[IdArray] = []
    reached = 0.0
    length = 0
    for band in descending_bands(logits, maximum, temperature):
        bands.append(band)
        cumulative = reached + np.cumsum(weights[band])
        position = int(np.searchsorted(cumulative, target, side="left"))
        if position < band.shape[0]:
            length += position + 1
            break
        length += band.shape[0]
        reached = float(cumulative[-1])
    ranked = bands[0] if len(bands) == 1 else np.concatenate(bands)
    return ranked[:length], ranked


# Histogram resolution for token_at_mass: buckets per unit of (max - logit) / T.
_BUCKETS_PER_UNIT = 16
_BUCKET_COUNT = 16 * 64


def token_at_mass(
    logits: FloatArray,
    maximum: float,
    temperature: float,
    probs: npt.NDArray[np.float64],
    target: float,
    workspace: Workspace,
) -> int:
    """The first token, in descending order, whose cumulative probability exceeds `target`.

    The head band (sorted) answers most draws on a peaked distribution. Otherwise
    the mass is summed per bucket of (max - logit) / T; buckets follow the
    descending order, so only the one bucket holding the target is sorted.

    Args:
        logits: The (penalised) logits.
        maximum: Their maximum.
        temperature: The temperature `probs` was computed at.
        probs: Every token's probability, indexed by id.
        target: u times the total mass.
        workspace: Scratch buffers.
    """
    head = np.flatnonzero(logits >= edge_below(logits, maximum - _BAND_EDGES[0] * temperature))
    if head.size <= _PARTITION_ABOVE:
        ordered = sort_descending(logits, head)
        cumulative = np.cumsum(probs[ordered])
        position = int(np.searchsorted(cumulative, target, side="right"))
        if position < ordered.size:
            return int(ordered[position])
    with np.errstate(over="ignore"):  # gaps beyond float32 round to inf: the last bucket
        return _token_in_bucket(logits, maximum, temperature, probs, target, workspace)


def _token_in_bucket(
    logits: FloatArray,
    maximum: float,
    temperature: float,
    probs: npt.NDArray[np.float64],
    target: float,
    workspace: Workspace,
) -> int:
    """`token_at_mass` past the head band: a histogram of the mass over buckets of
    (max - logit) / T, then a sort of the one bucket that holds the target."""
    size = logits.shape[0]
    scaled = np.subtract(maximum, logits, out=workspace.array("bucket-f", size, logits.dtype))
    scaled *= _BUCKETS_PER_UNIT / temperature
    np.minimum(scaled, _BUCKET_COUNT - 1, out=scaled)
    buckets = workspace.array("bucket-i", size, np.intp)
    np.copyto(buckets, scaled, casting="unsafe")
    bucket_mass = np.bincount(buckets, weights=probs, minlength=_BUCKET_COUNT)
    cumulative_mass = np.cumsum(bucket_mass)
    bucket = min(int(np.searchsorted(cumulative_mass, target, side="right")), _BUCKET_COUNT - 1)
    while bucket > 0 and bucket_mass[bucket] == 0.0:
        bucket -= 1  # rounding past the last non-empty bucket
    reached = float(cumulative_mass[bucket - 1]) if bucket else 0.0
    ordered = sort_descending(logits, np.flatnonzero(buckets == bucket))
    ordered_probs = probs[ordered]
    cumulative = reached + np.cumsum(ordered_probs)
    position = int(np.searchsorted(cumulative, target, side="right"))
    if position >= ordered.size:
        # u * total rounded past the end: the last token that can be drawn.
        position = int(np.flatnonzero(ordered_probs)[-1])
    return int(ordered[position])
