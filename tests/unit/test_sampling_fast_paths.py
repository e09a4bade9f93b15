"""The per-token fast paths give the same numbers as the guarded, general ones.

Each fast path skips work the general path does (numpy's error-state switch, a pass
over the vocabulary, a repeated exponential): these tests pin it to the general
path's result, at its edges too, so that speed never changes a figure.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampling import SamplerSettings, probabilities
from sampling.candidates import Candidates
from sampling.entropy import entropy_and_normaliser
from sampling.ordering import sort_descending, stable_argsort
from sampling.samplers.penalties import (
    PenaltiesParams,
    _distinct_with_counts,
    _extremely_penalized,
    penalized_logits,
)
from sampling.weights import weights_of
from sampling.workspace import Workspace
from tests.hypothesis_profiles import examples

pytestmark = pytest.mark.filterwarnings("error")

VOCAB = 512


def logits_from(seed: int, scale: float = 3.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(VOCAB) * scale).astype(np.float32)


@settings(max_examples=examples(60), deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    repeat=st.floats(0.5, 2.0),
    frequency=st.floats(-2.0, 2.0),
    presence=st.floats(-2.0, 2.0),
    window=st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=80),
)
def test_moderate_penalties_equal_the_guarded_path(
    seed: int, repeat: float, frequency: float, presence: float, window: list[int]
) -> None:
    logits = logits_from(seed)
    chosen = SamplerSettings(
        repeat_penalty=repeat,
        frequency_penalty=frequency,
        presence_penalty=presence,
        repeat_last_n=len(window),
    )
    ids, counts = np.unique(np.array(window, dtype=np.int64), return_counts=True)
    guarded = _extremely_penalized(logits, chosen.of(PenaltiesParams), ids, counts)
    np.testing.assert_array_equal(penalized_logits(logits, chosen, window), guarded)


def test_distinct_with_counts_is_numpys_unique() -> None:
    window = np.array([7, 3, 7, 7, 0, 3, 511, 0], dtype=np.int64)
    ids, counts = _distinct_with_counts(window)
    assert ids.tolist() == [0, 3, 7, 511]
    assert counts.tolist() == [2, 2, 3, 1]
    single_ids, single_counts = _distinct_with_counts(np.array([5], dtype=np.int64))
    assert single_ids.tolist() == [5] and single_counts.tolist() == [1]


def test_a_masked_window_token_takes_the_guarded_path() -> None:
    logits = logits_from(1)
    logits[10] = -np.inf
    out = penalized_logits(logits, SamplerSettings(repeat_penalty=1.3, repeat_last_n=64), [10, 11])
    assert out[10] == -np.inf
    assert out[11] == pytest.approx(
        logits[11] / 1.3 if logits[11] > 0 else logits[11] * 1.3, rel=1e-6
    )


def test_a_penalty_pushing_past_float32_takes_the_guarded_path() -> None:
    logits = logits_from(2)
    logits[3] = 3e38
    out = penalized_logits(logits, SamplerSettings(presence_penalty=-1e38, repeat_last_n=64), [3])
    assert out[3] == np.finfo(np.float32).max


def _reference_entropy(logits: np.ndarray) -> tuple[float, float]:
    wide = logits.astype(np.float64)
    top = float(wide.max())
    exps = np.exp(wide - top)
    total = float(exps.sum())
    probs = exps / total
    kept = probs > 0
    return float(-(probs[kept] * np.log(probs[kept])).sum()), total


@pytest.mark.parametrize("shift", [-1e5, -300.0, -40.5, -39.5, 0.0, 20.0, 59.5, 60.5, 500.0])
def test_entropy_is_the_same_on_either_side_of_the_unshifted_range(shift: float) -> None:
    logits = logits_from(3) + np.float32(shift)
    logits -= np.float32(logits.max() - shift)  # the maximum sits exactly at `shift`
    entropy, normaliser = entropy_and_normaliser(logits, float(logits.max()), Workspace())
    expected_entropy, expected_normaliser = _reference_entropy(logits)
    assert entropy == pytest.approx(expected_entropy, rel=2e-5, abs=1e-6)
    assert normaliser == pytest.approx(expected_normaliser, rel=2e-5)


def test_entropy_ignores_masked_tokens_in_the_unshifted_range() -> None:
    logits = logits_from(4)
    logits[::7] = -np.inf
    entropy, _ = entropy_and_normaliser(logits, float(logits.max()), Workspace())
    assert entropy == pytest.approx(_reference_entropy(logits)[0], rel=2e-5)


def test_dividing_float64_gaps_by_a_tiny_temperature_is_silent() -> None:
    logits = np.array([1e300, 0.0, -1e300], dtype=np.float64)
    weights = weights_of(logits, 1e300, 1e-10, np.array([0, 1, 2]))
    assert weights.tolist() == [1.0, 0.0, 0.0]


def test_float32_logits_at_a_tiny_temperature_still_give_weight_zero_silently() -> None:
    logits = np.array([3e38, -3e38], dtype=np.float32)
    weights = weights_of(logits, float(logits[0]), 1e-300, np.array([0, 1]))
    assert weights.tolist() == [1.0, 0.0]


def test_remembered_weights_are_dropped_when_the_temperature_changes() -> None:
    logits = logits_from(5)
    candidates = Candidates(logits, float(logits.max()), int(logits.argmax()), (), Workspace())
    ids = np.argsort(-logits, kind="stable")[:10]
    at_one = weights_of(logits, float(logits[ids[0]]), 1.0, ids)
    candidates.cut(ids, "top_k", weights=at_one)
    assert candidates.kept_weights() is at_one
    candidates.temperature = 0.5
    recomputed = candidates.kept_weights()
    assert recomputed is not at_one
    np.testing.assert_array_equal(recomputed, weights_of(logits, float(logits[ids[0]]), 0.5, ids))


@pytest.mark.parametrize("temperature_last", [False, True])
def test_chained_filters_give_the_distribution_computed_from_scratch(
    temperature_last: bool,
) -> None:
    logits = logits_from(6, scale=2.0)
    chosen = SamplerSettings(
        temperature=0.7, top_k=60, top_p=0.8, min_p=0.05, temperature_last=temperature_last
    )
    probs = probabilities(logits, chosen)
    order = np.argsort(-logits, kind="stable")
    filter_t = 1.0 if temperature_last else 0.7
    kept = order[:60]
    weights = np.exp((logits[kept].astype(np.float64) - logits[kept[0]]) / filter_t)
    cumulative = np.cumsum(weights) / weights.sum()
    kept = kept[: int(np.searchsorted(cumulative, 0.8, side="left")) + 1]
    ratios = np.exp((logits[kept].astype(np.float64) - logits[kept[0]]) / filter_t)
    kept = kept[ratios >= 0.05]
    final = np.exp((logits[kept].astype(np.float64) - logits[kept[0]]) / 0.7)
    expected = np.zeros(VOCAB)
    expected[kept] = final / final.sum()
    np.testing.assert_allclose(probs, expected, rtol=1e-12, atol=0)
    assert math.isclose(float(probs.sum()), 1.0, rel_tol=1e-12)


@settings(max_examples=examples(40), deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["normal", "ties", "signed zeros and -inf", "huge", "flat"]),
)
def test_the_keyed_sort_orders_like_a_stable_argsort(seed: int, kind: str) -> None:
    generator = np.random.default_rng(seed)
    size = 6000
    logits = generator.standard_normal(size).astype(np.float32)
    if kind == "ties":
        logits = np.round(logits).astype(np.float32)
    elif kind == "signed zeros and -inf":
        logits[::5] = -np.inf
        logits[1::7] = -0.0
        logits[2::7] = 0.0
    elif kind == "huge":
        logits *= np.float32(1e37)
    elif kind == "flat":
        logits[:] = -3.0
    token_ids = np.sort(
        generator.choice(size, size=int(generator.integers(2049, size)), replace=False)
    )
    expected = token_ids[np.argsort(-logits[token_ids], kind="stable")]
    ordered = sort_descending(logits, token_ids)
    assert ordered.dtype == np.intp
    np.testing.assert_array_equal(ordered, expected)


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rounded=st.booleans(), size=st.sampled_from([50, 5000]))
def test_stable_argsort_is_numpys_stable_argsort(seed: int, rounded: bool, size: int) -> None:
    values = np.random.default_rng(seed).standard_normal(size)
    if rounded:
        values = np.round(values, 1)
    values[::97] = np.inf
    np.testing.assert_array_equal(stable_argsort(values), np.argsort(values, kind="stable"))


def _typical_reference(logits: np.ndarray, p: float, temperature: float) -> np.ndarray:
    """Typical-p over the whole vocabulary, written plainly: the kept ids, sorted."""
    order = np.argsort(-logits, kind="stable")
    wide = logits[order].astype(np.float64)
    probs = np.exp((wide - wide[0]) / temperature)
    probs /= probs.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        surprise = -np.log(probs)
        entropy = float(np.sum(np.where(probs > 0, probs * surprise, 0.0)))
    by_typicality = np.argsort(np.abs(surprise - entropy), kind="stable")
    keep = int(np.searchsorted(np.cumsum(probs[by_typicality]), p, side="right")) + 1
    return np.sort(order[by_typicality[:keep]])


@settings(max_examples=examples(60), deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([0.5, 3.0, 12.0]),
    p=st.sampled_from([0.2, 0.5, 0.9, 0.99]),
    temperature=st.sampled_from([0.5, 1.0]),
)
def test_typical_p_keeps_what_the_plain_algorithm_keeps(
    seed: int, scale: float, p: float, temperature: float
) -> None:
    logits = (np.random.default_rng(seed).standard_normal(3000) * scale).astype(np.float32)
    probs = probabilities(logits, SamplerSettings(temperature=temperature, typical_p=p))
    kept = np.flatnonzero(probs)
    expected = _typical_reference(logits, p, temperature)
    np.testing.assert_array_equal(kept, expected[probs[expected] > 0])


def test_typical_p_on_a_peaked_step_keeps_the_top_token_alone() -> None:
    logits = logits_from(7)
    logits[123] = 40.0
    probs = probabilities(logits, SamplerSettings(temperature=1.0, typical_p=0.5))
    assert np.flatnonzero(probs).tolist() == [123]
    assert probs[123] == 1.0
