"""Properties of the sampler on random logits and settings (hypothesis): the
distribution, the kept set, the record, and the fast paths against a slow full-sort
reference written here. The random stream has its own file (test_sampling_stream)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from sampling import Sampler, SamplerSettings, probabilities
from sampling.samplers.penalties import PenaltiesParams
from tests.unit.sampling_strategies import PROPERTY_SETTINGS, cases

# --- a slow reference: full sort, written out -----------------------------------


def reference_logits(logits: np.ndarray, chosen: SamplerSettings, history: list[int]) -> np.ndarray:
    """+inf handling and penalties, at the input's dtype (float64 for integers)."""
    dtype = logits.dtype if logits.dtype in (np.float32, np.float64) else np.float64
    x = logits.astype(dtype)
    if np.isposinf(x).any():
        x = np.where(np.isposinf(x), 0.0, -np.inf).astype(dtype)
    window = history[-chosen.repeat_last_n :] if chosen.repeat_last_n > 0 else []
    if chosen.of(PenaltiesParams).penalizes and window:
        x = x.copy()
        for token in set(window):
            value = float(x[token])
            if chosen.repeat_penalty != 1.0:
                value = (
                    value / chosen.repeat_penalty if value > 0 else value * chosen.repeat_penalty
                )
            value -= window.count(token) * chosen.frequency_penalty + chosen.presence_penalty
            x[token] = value
    return x


def descending_order(x: np.ndarray) -> list[int]:
    """Every token id by descending logit, ties by lower id (a full sort)."""
    return sorted(range(x.shape[0]), key=lambda i: (-float(x[i]), i))


class Boundary(Exception):
    """A cut decision sits within rounding of its threshold; no exact answer exists."""


def reference_probabilities(
    logits: np.ndarray, chosen: SamplerSettings, history: list[int], margin: float = 1e-9
) -> np.ndarray:
    """The distribution DESIGN.md describes, by full sort and explicit prefixes."""
    x = reference_logits(logits, chosen, history).astype(np.float64)
    n = x.shape[0]
    order = descending_order(x)
    result = np.zeros(n)
    if chosen.temperature < 1e-6:
        result[order[0]] = 1.0
        return result
    top = float(x[order[0]])
    t_filter = 1.0 if chosen.temperature_last else chosen.temperature
    ratio = np.exp((x - top) / t_filter)  # p_i / p_max at the filters' temperature
    kept = order
    top_k_cut = 0 < chosen.top_k < n
    if top_k_cut:
        kept = order[: chosen.top_k]
    if chosen.top_p < 1.0:
        vocab_total = math.fsum(ratio)
        kept_mass = math.fsum(ratio[i] for i in kept)
        if chosen.top_p_scope == "vocab" and top_k_cut:
            total = vocab_total
            if abs(chosen.top_p - kept_mass / total) < margin:
                raise Boundary
            cut = chosen.top_p < kept_mass / total
        else:
            total = kept_mass
            cut = True
        if cut:
            prefix: list[int] = []
            cumulative = 0.0
            for token in kept:
                if cumulative / total >= chosen.top_p:
                    break
                prefix.append(token)
                cumulative += ratio[token]
                if abs(cumulative / total - chosen.top_p) < margin:
                    raise Boundary
            kept = prefix
    if chosen.min_p > 0.0:
        for token in kept:
            if abs(ratio[token] - chosen.min_p) < margin * max(chosen.min_p, 1e-300):
                raise Boundary
        kept = [token for token in kept if ratio[token] >= chosen.min_p]
    weights = {token: math.exp((x[token] - top) / chosen.temperature) for token in kept}
    total = math.fsum(weights.values())
    for token, weight in weights.items():
        result[token] = weight / total
    return result


# --- distribution properties ----------------------------------------------------


@PROPERTY_SETTINGS
@given(cases())
def test_probabilities_are_a_distribution(
    case: tuple[np.ndarray, SamplerSettings, list[int]],
) -> None:
    logits, chosen, history = case
    before = logits.copy()
    history_before = list(history)
    probs = probabilities(logits, chosen, history)
    np.testing.assert_array_equal(logits, before)  # never mutated
    assert history == history_before
    assert probs.dtype == np.float64 and probs.shape == logits.shape
    assert (probs >= 0).all()
    assert abs(math.fsum(probs) - 1.0) < 1e-9
    # The argmax (lowest id among the max) of the penalised logits survives.
    x = reference_logits(logits, chosen, history)
    argmax = int(np.argmax(x))
    assert probs[argmax] > 0
    assert np.count_nonzero(probs) >= 1


@PROPERTY_SETTINGS
@given(cases())
def test_kept_set_is_a_prefix_of_descending_order(
    case: tuple[np.ndarray, SamplerSettings, list[int]],
) -> None:
    logits, chosen, history = case
    probs = probabilities(logits, chosen, history)
    x = reference_logits(logits, chosen, history)
    order = descending_order(x)
    positive = [bool(probs[i] > 0) for i in order]
    n_positive = sum(positive)
    assert positive == [True] * n_positive + [False] * (len(order) - n_positive)
    # Cut tokens are exactly zero and probabilities do not increase down the order.
    ordered = probs[order]
    assert (np.diff(ordered) <= 1e-15).all()


@PROPERTY_SETTINGS
@given(cases())
def test_probabilities_match_the_full_sort_reference(
    case: tuple[np.ndarray, SamplerSettings, list[int]],
) -> None:
    logits, chosen, history = case
    try:
        expected = reference_probabilities(logits, chosen, history, margin=1e-6)
    except Boundary:
        assume(False)
        return
    actual = probabilities(logits, chosen, history)
    np.testing.assert_array_equal(actual > 0, expected > 0)
    np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=1e-12)


@PROPERTY_SETTINGS
@given(cases(), st.integers(1, 6))
def test_steps_are_consistent(
    case: tuple[np.ndarray, SamplerSettings, list[int]], n_candidates: int
) -> None:
    logits, chosen, history = case
    before = logits.copy()
    history_before = list(history)
    sampler = Sampler(chosen, vocab_size=logits.shape[0], n_candidates=n_candidates)
    step = sampler.sample(logits, history)
    np.testing.assert_array_equal(logits, before)
    assert history == history_before
    probs = probabilities(logits, chosen, history)

    assert 0 <= step.token_id < logits.shape[0]
    assert probs[step.token_id] > 0  # the token drawn was kept
    assert step.prob == pytest.approx(probs[step.token_id], rel=1e-12, abs=0)
    assert step.settings is chosen
    if chosen.greedy:
        assert step.cut_by == "greedy" and step.draw is None and step.prob == 1.0
        assert step.token_id == int(np.argmax(reference_logits(logits, chosen, history)))
    elif chosen.draw == "gumbel":
        assert step.draw is None
    else:
        assert step.draw is not None and 0.0 <= step.draw < 1.0

    # cut_by is sensible: "none" exactly when no token of positive weight was cut.
    x = reference_logits(logits, chosen, history).astype(np.float64)
    if not chosen.greedy:
        alive = int(np.count_nonzero(np.exp((x - x.max()) / chosen.temperature)))
        if step.cut_by == "none":
            assert np.count_nonzero(probs) == alive
        if np.count_nonzero(probs) < alive:
            assert step.cut_by in ("top_k", "top_p", "min_p")
    if step.cut_by == "top_k":
        assert 0 < chosen.top_k < logits.shape[0]
    if step.cut_by == "top_p":
        assert chosen.top_p < 1.0
    if step.cut_by == "min_p":
        assert chosen.min_p > 0.0
    assert step.n_kept >= np.count_nonzero(probs)

    # The candidate table: top-N by penalised logit, prob_after as drawn from.
    candidates = step.candidates
    assert len(candidates) == min(n_candidates, logits.shape[0])
    ids = [c.token_id for c in candidates]
    assert len(set(ids)) == len(ids)
    order = descending_order(reference_logits(logits, chosen, history))
    assert ids == order[: len(ids)]
    befores = [c.prob_before for c in candidates]
    assert befores == sorted(befores, reverse=True)
    for position, candidate in enumerate(candidates):
        assert candidate.prob_after == pytest.approx(probs[candidate.token_id], rel=1e-12, abs=0)
        assert candidate.kept == (position < step.n_kept)
        assert 0.0 <= candidate.prob_before <= 1.0 + 1e-6
    assert step.entropy >= -1e-6
    assert step.entropy <= math.log(logits.shape[0]) + 1e-4


@PROPERTY_SETTINGS
@given(cases())
def test_n_kept_counts_the_nonzero_probabilities(
    case: tuple[np.ndarray, SamplerSettings, list[int]],
) -> None:
    logits, chosen, history = case
    step = Sampler(chosen).sample(logits, history)
    probs = probabilities(logits, chosen, history)
    assert step.n_kept == np.count_nonzero(probs)
    for candidate in step.candidates:
        assert candidate.kept == (candidate.prob_after > 0)


# --- a realistic vocabulary: fast paths against the full-sort reference -----------

VOCAB = 49152


def peaked_logits(dtype: type) -> np.ndarray:
    rng = np.random.default_rng(12345)
    logits = rng.normal(size=VOCAB) * 3.0
    logits[[17, 4242, 31000, 49151]] += [16.0, 15.5, 14.0, 12.0]
    logits[rng.integers(0, VOCAB, 50)] += 8.0
    return logits.astype(dtype)


def fast_reference(logits: np.ndarray, chosen: SamplerSettings) -> np.ndarray:
    """The reference of above, vectorised with a full (stable) argsort."""
    x = logits.astype(np.float64)
    n = x.shape[0]
    order = np.argsort(-x, kind="stable")
    top = x[order[0]]
    if chosen.greedy:
        result = np.zeros(n)
        result[order[0]] = 1.0
        return result
    t_filter = 1.0 if chosen.temperature_last else chosen.temperature
    ratio = np.exp((x - top) / t_filter)
    kept = order
    top_k_cut = 0 < chosen.top_k < n
    if top_k_cut:
        kept = order[: chosen.top_k]
    if chosen.top_p < 1.0:
        total = ratio.sum() if (chosen.top_p_scope == "vocab" and top_k_cut) else ratio[kept].sum()
        fractions = np.cumsum(ratio[kept]) / total
        if not (chosen.top_p_scope == "vocab" and top_k_cut and chosen.top_p >= fractions[-1]):
            near = np.abs(fractions - chosen.top_p).min()
            assert near > 1e-9, "test vector sits on a top-p boundary; choose another p"
            kept = kept[: int(np.searchsorted(fractions, chosen.top_p, side="left")) + 1]
    if chosen.min_p > 0.0:
        kept = kept[ratio[kept] >= chosen.min_p]
    weights = np.exp((x[kept] - top) / chosen.temperature)
    result = np.zeros(n)
    result[kept] = weights / weights.sum()
    return result


LARGE_SETTINGS = [
    SamplerSettings(temperature=0.8),
    SamplerSettings(temperature=0.8, top_k=40),
    SamplerSettings(temperature=0.8, top_p=0.9),
    SamplerSettings(temperature=0.8, top_p=0.999),
    SamplerSettings(temperature=2.0, top_p=0.95),
    SamplerSettings(temperature=0.1, top_p=0.5),
    SamplerSettings(temperature=0.8, top_k=40, top_p=0.9),
    SamplerSettings(temperature=0.8, top_k=40, top_p=0.9, top_p_scope="vocab"),
    SamplerSettings(temperature=0.8, top_k=2000, top_p=0.9999, top_p_scope="vocab"),
    SamplerSettings(temperature=0.8, min_p=0.05),
    SamplerSettings(temperature=3.0, min_p=0.001),
    SamplerSettings(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, temperature_last=True),
    SamplerSettings(temperature=1.5, top_p=0.9, temperature_last=True),
    SamplerSettings(temperature=0.0, top_k=40),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("chosen", LARGE_SETTINGS, ids=[str(i) for i in range(len(LARGE_SETTINGS))])
def test_large_vocabulary_matches_full_sort(chosen: SamplerSettings, dtype: type) -> None:
    logits = peaked_logits(dtype)
    expected = fast_reference(logits, chosen)
    actual = probabilities(logits, chosen)
    np.testing.assert_array_equal(actual > 0, expected > 0)
    np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=1e-13)


def flat_logits(dtype: type) -> np.ndarray:
    rng = np.random.default_rng(777)
    logits = rng.normal(size=VOCAB)
    logits[rng.random(VOCAB) < 0.1] = -np.inf
    return logits.astype(dtype)


DRAW_CASES = [("peaked", chosen) for chosen in LARGE_SETTINGS] + [
    ("flat", SamplerSettings()),
    ("flat", SamplerSettings(temperature=1.7)),
    ("flat", SamplerSettings(temperature=0.3)),
    ("flat", SamplerSettings(temperature=0.8, top_p=0.9)),
    ("flat", SamplerSettings(temperature=0.8, min_p=0.05)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize(
    ("kind", "chosen"), DRAW_CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(DRAW_CASES)]
)
def test_large_vocabulary_draws_match_inverse_cdf_by_hand(
    kind: str, chosen: SamplerSettings, dtype: type
) -> None:
    # The token for each uniform: the first, in descending order, whose cumulative
    # mass exceeds u (the sampler reports the u it drew).
    logits = (peaked_logits if kind == "peaked" else flat_logits)(dtype)
    expected = fast_reference(logits, chosen)
    order = np.argsort(-logits.astype(np.float64), kind="stable")
    cumulative = np.cumsum(expected[order])
    sampler = Sampler(chosen.with_changes(seed=7), vocab_size=VOCAB)
    for i in range(20):
        step = sampler.sample(logits)
        if chosen.greedy:
            assert step.token_id == order[0]
            continue
        assert step.draw is not None
        target = step.draw * cumulative[-1]
        position = int(np.searchsorted(cumulative, target, side="right"))
        if np.abs(cumulative - target).min() < 1e-9:
            continue  # within rounding of a boundary: either neighbour is right
        assert step.token_id == int(order[position]), f"draw {i}, u={step.draw}"
        assert step.prob == pytest.approx(expected[step.token_id], rel=1e-9)


FILTER_COMBINATIONS = [
    {},
    {"top_k": 2},
    {"top_p": 0.9},
    {"top_k": 3, "top_p": 0.75, "top_p_scope": "vocab"},
    {"min_p": 0.2},
    {"top_k": 4, "top_p": 0.5, "min_p": 0.1, "temperature_last": True},
    {"draw": "gumbel"},
    {"rng": "xorshift128", "top_k": 3},
    {"repeat_penalty": 1.3, "repeat_last_n": 4},
]


@pytest.mark.parametrize("extra", FILTER_COMBINATIONS, ids=lambda e: ",".join(e) or "plain")
@pytest.mark.parametrize("temperature", [0.0, 1e-9, 5e-7])
def test_temperature_zero_is_greedy_everywhere(extra: dict[str, Any], temperature: float) -> None:
    # candle's from_sampling with temperature 0 divides by zero and fails on NaN.
    logits = np.array([0.0, -1.0, 3.0, 3.0, 2.9, -np.inf], dtype=np.float32)
    chosen = SamplerSettings(temperature=temperature, **extra)
    sampler = Sampler(chosen)
    history = [0, 1]
    for _ in range(5):
        step = sampler.sample(logits, history)
        assert step.token_id == 2  # the first of the two maxima
        assert step.prob == 1.0 and step.n_kept == 1 and step.cut_by == "greedy"
        assert step.draw is None
    probs = probabilities(logits, chosen, history)
    assert probs.tolist() == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]


def test_plus_inf_is_the_argmax() -> None:
    logits = np.array([1.0, np.inf, 5.0, np.inf], dtype=np.float32)
    probs = probabilities(logits, SamplerSettings(temperature=0.7))
    assert probs.tolist() == [0.0, 0.5, 0.0, 0.5]
    assert probabilities(logits, SamplerSettings(temperature=0.0)).tolist() == [0, 1, 0, 0]


# --- n_kept and cut_by on inputs hypothesis rarely reaches ---------------------


@pytest.mark.parametrize(
    ("logits", "chosen", "n_kept"),
    [
        ([1.0, -np.inf, 0.5], SamplerSettings(), 2),
        ([0.0, -np.inf, -np.inf, -np.inf], SamplerSettings(top_k=3), 1),
        ([0.0, -np.inf, 1.0, -np.inf], SamplerSettings(top_p=0.99999), 2),
        ([0.0, -900.0, -1.0], SamplerSettings(temperature=1.0), 2),  # exp underflows
    ],
)
def test_n_kept_ignores_impossible_tokens(
    logits: list[float], chosen: SamplerSettings, n_kept: int
) -> None:
    array = np.array(logits)
    step = Sampler(chosen).sample(array)
    probs = probabilities(array, chosen)
    assert step.n_kept == n_kept == np.count_nonzero(probs)
    assert [c.kept for c in step.candidates] == [c.prob_after > 0 for c in step.candidates]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_min_p_cut_is_reported(dtype: type) -> None:
    # min-p alone cuts token 1 (ratio e^-1 < 0.5): cut_by must say so.
    logits = np.array([1.0, 0.0], dtype=dtype)
    chosen = SamplerSettings(min_p=0.5)
    assert probabilities(logits, chosen).tolist() == [1.0, 0.0]
    step = Sampler(chosen).sample(logits)
    assert step.n_kept == 1
    assert step.cut_by == "min_p"


def test_min_p_cut_after_top_k_is_reported() -> None:
    logits = np.array([1.0, 0.0, -1.0, -2.0], dtype=np.float32)
    step = Sampler(SamplerSettings(top_k=3, min_p=0.5)).sample(logits)
    assert (step.n_kept, step.cut_by) == (1, "min_p")


def test_no_numpy_warnings_on_minus_inf() -> None:
    import warnings

    logits = np.array([1.0, -np.inf, 0.5, -np.inf], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for chosen in (
            SamplerSettings(),
            SamplerSettings(draw="gumbel"),
            SamplerSettings(top_p=0.5),
        ):
            Sampler(chosen).sample(logits)
            probabilities(logits, chosen)
