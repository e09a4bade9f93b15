"""Properties of the sampler on random logits and settings (hypothesis), the random
stream's behaviour, empirical frequencies, and the fast paths against a slow
full-sort reference written here."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sampling import Sampler, SamplerSettings, probabilities

PROPERTY_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- strategies -----------------------------------------------------------------

TIE_VALUES = [0.0, 1.0, -1.0, 2.5, 2.5, -3.25]


@st.composite
def logit_arrays(draw: st.DrawFn, max_size: int = 300) -> np.ndarray:
    """1-D float32/float64 logits with ties, some -inf, sometimes +inf; one finite."""
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    size = draw(st.integers(1, max_size))
    spread = draw(st.sampled_from([1.0, 5.0, 30.0]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    values = rng.normal(size=size) * spread
    # Ties: some entries copied from a small pool.
    if draw(st.booleans()):
        picks = rng.random(size) < 0.5
        values[picks] = rng.choice(TIE_VALUES, size=int(picks.sum()))
    if draw(st.booleans()):
        values[rng.random(size) < 0.3] = -np.inf
    if size > 1 and draw(st.integers(0, 9)) == 0:
        values[rng.integers(0, size, size=draw(st.integers(1, 2)))] = np.inf
    if not np.isfinite(values).any() and not np.isposinf(values).any():
        values[int(rng.integers(0, size))] = draw(st.sampled_from([0.0, -5.0, 7.0]))
    return values.astype(dtype)


@st.composite
def sampler_settings(draw: st.DrawFn) -> SamplerSettings:
    """Valid settings, the off values often."""
    temperature = draw(
        st.one_of(
            st.sampled_from([0.0, 1e-7, 0.1, 0.5, 0.8, 1.0, 1.5, 3.0]),
            st.floats(0.05, 5.0),
        )
    )
    top_k = draw(st.one_of(st.just(0), st.integers(1, 8), st.integers(1, 400)))
    top_p = draw(st.one_of(st.just(1.0), st.sampled_from([0.5, 0.9, 0.95]), st.floats(0.01, 1.0)))
    min_p = draw(st.one_of(st.just(0.0), st.sampled_from([0.05, 0.1]), st.floats(0.0, 0.99)))
    penalize = draw(st.booleans())
    return SamplerSettings(
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        top_p_scope=draw(st.sampled_from(["kept", "vocab"])),
        min_p=min_p,
        repeat_penalty=draw(st.sampled_from([1.0, 1.1, 2.0, 0.7])) if penalize else 1.0,
        repeat_last_n=draw(st.sampled_from([1, 4, 64])) if penalize else 0,
        frequency_penalty=draw(st.sampled_from([0.0, 0.3, -0.2])) if penalize else 0.0,
        presence_penalty=draw(st.sampled_from([0.0, 0.5, -0.5])) if penalize else 0.0,
        temperature_last=draw(st.booleans()),
        draw=draw(st.sampled_from(["inverse_cdf", "gumbel"])),
        rng=draw(st.sampled_from(["pcg64", "xorshift128"])),
        seed=draw(st.integers(0, 2**64 - 1)),
    )


@st.composite
def cases(draw: st.DrawFn, max_size: int = 300) -> tuple[np.ndarray, SamplerSettings, list[int]]:
    logits = draw(logit_arrays(max_size))
    chosen = draw(sampler_settings())
    history = draw(st.lists(st.integers(0, logits.shape[0] - 1), max_size=12))
    return logits, chosen, history


# --- a slow reference: full sort, written out -----------------------------------


def reference_logits(logits: np.ndarray, chosen: SamplerSettings, history: list[int]) -> np.ndarray:
    """+inf handling and penalties, at the input's dtype (float64 for integers)."""
    dtype = logits.dtype if logits.dtype in (np.float32, np.float64) else np.float64
    x = logits.astype(dtype)
    if np.isposinf(x).any():
        x = np.where(np.isposinf(x), 0.0, -np.inf).astype(dtype)
    window = history[-chosen.repeat_last_n :] if chosen.repeat_last_n > 0 else []
    if chosen.penalizes and window:
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


@PROPERTY_SETTINGS
@given(cases(max_size=60), st.integers(2, 8))
def test_same_seed_same_tokens(
    case: tuple[np.ndarray, SamplerSettings, list[int]], steps: int
) -> None:
    logits, chosen, history = case
    first, second = Sampler(chosen), Sampler(chosen)
    rows = [np.roll(logits, i) for i in range(steps)]
    a = [first.sample(row, history) for row in rows]
    b = [second.sample(row, history) for row in rows]
    assert [s.token_id for s in a] == [s.token_id for s in b]
    assert [s.draw for s in a] == [s.draw for s in b]


@PROPERTY_SETTINGS
@given(cases(max_size=60), st.integers(2, 8))
def test_swapping_in_equal_settings_keeps_the_stream(
    case: tuple[np.ndarray, SamplerSettings, list[int]], steps: int
) -> None:
    logits, chosen, history = case
    plain, swapped = Sampler(chosen), Sampler(chosen)
    for i in range(steps):
        row = np.roll(logits, i)
        swapped.settings = replace(chosen)  # a new, equal-valued object
        assert swapped.settings is not chosen
        a, b = plain.sample(row, history), swapped.sample(row, history)
        assert (a.token_id, a.draw) == (b.token_id, b.draw)


@PROPERTY_SETTINGS
@given(logit_arrays(max_size=60), sampler_settings(), sampler_settings())
def test_swapping_settings_does_not_reseed(
    logits: np.ndarray, first: SamplerSettings, other: SamplerSettings
) -> None:
    # Same generator and an inverse-CDF draw on both: one uniform per token, so the
    # uniforms continue the same sequence whatever the filters and the seed field.
    first = first.with_changes(temperature=max(first.temperature, 0.5), draw="inverse_cdf")
    other = other.with_changes(
        temperature=max(other.temperature, 0.5), draw="inverse_cdf", rng=first.rng
    )
    plain, swapping = Sampler(first), Sampler(first)
    plain_draws, swapping_draws = [], []
    for i in range(6):
        swapping.settings = other if i % 2 else first
        plain_draws.append(plain.sample(logits).draw)
        swapping_draws.append(swapping.sample(logits).draw)
    assert plain_draws == swapping_draws


@PROPERTY_SETTINGS
@given(cases(max_size=60), st.integers(1, 5))
def test_reset_restarts_the_stream(
    case: tuple[np.ndarray, SamplerSettings, list[int]], steps: int
) -> None:
    logits, chosen, history = case
    sampler = Sampler(chosen)
    first = [(s.token_id, s.draw) for s in (sampler.sample(logits, history) for _ in range(steps))]
    sampler.reset()
    again = [(s.token_id, s.draw) for s in (sampler.sample(logits, history) for _ in range(steps))]
    assert first == again


def test_reset_uses_the_current_seed() -> None:
    logits = np.array([2.0, 1.5, 1.0, 0.5, 0.0, -1.0], dtype=np.float32)
    sampler = Sampler(SamplerSettings(seed=1))
    sampler.sample(logits)
    sampler.settings = SamplerSettings(seed=2)
    sampler.reset()
    fresh = Sampler(SamplerSettings(seed=2))
    assert [sampler.sample(logits).draw for _ in range(5)] == [
        fresh.sample(logits).draw for _ in range(5)
    ]


# --- empirical frequencies --------------------------------------------------------

FREQUENCY_LOGITS = np.array([2.0, 1.5, 1.0, 0.5, 0.0, -1.0], dtype=np.float32)
# The 0.9999 quantile of chi-square with 5 degrees of freedom is about 25.7.
CHI2_LIMIT_5_DF = 25.7


@pytest.mark.parametrize(
    ("draw", "rng"),
    [
        ("inverse_cdf", "pcg64"),
        ("gumbel", "pcg64"),
        ("inverse_cdf", "xorshift128"),
        ("gumbel", "xorshift128"),
    ],
)
@pytest.mark.parametrize(
    "extra",
    [{}, {"top_k": 4, "temperature": 0.8}],
    ids=["all", "top_k_4"],
)
def test_empirical_frequencies_match(draw: str, rng: str, extra: dict[str, Any]) -> None:
    chosen = SamplerSettings(draw=draw, rng=rng, seed=2024, **extra)  # type: ignore[arg-type]
    expected = probabilities(FREQUENCY_LOGITS, chosen)
    sampler = Sampler(chosen, n_candidates=1)
    draws = 12000
    counts = np.bincount(
        [sampler.sample(FREQUENCY_LOGITS).token_id for _ in range(draws)], minlength=6
    )
    assert (counts[expected == 0] == 0).all()  # cut tokens never drawn
    live = expected > 0
    chi2 = float((((counts - draws * expected) ** 2)[live] / (draws * expected[live])).sum())
    assert chi2 < CHI2_LIMIT_5_DF
    np.testing.assert_allclose(counts / draws, expected, atol=0.02)


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


# --- seeds and candle's bugs we do not copy ----------------------------------------


def test_every_seed_has_its_own_stream() -> None:
    logits = np.zeros(1000, dtype=np.float32)
    seeds = [0, 1, 2, 2**32, 2**32 + 1, 2**64 - 1]
    draws = [Sampler(SamplerSettings(seed=s)).sample(logits).draw for s in seeds]
    assert len(set(draws)) == len(seeds)
    # Over 1000 equally likely tokens, different uniforms pick different tokens.
    tokens = [Sampler(SamplerSettings(seed=s)).sample(logits).token_id for s in seeds]
    assert len(set(tokens)) == len(seeds)
    xorshift = [
        Sampler(SamplerSettings(seed=s, rng="xorshift128")).sample(logits).draw
        for s in (0, 2, 3, 2**32 - 1)
    ]
    assert len(set(xorshift)) == 4  # run.c's generator: the low 32 bits count


def test_small_seeds_differ_under_2_32() -> None:
    # candle's Metal set_seed made every seed below 2**32 the same stream.
    logits = np.zeros(100, dtype=np.float32)
    firsts = {Sampler(SamplerSettings(seed=s)).sample(logits).draw for s in (7, 42, 299792458)}
    assert len(firsts) == 3


@pytest.mark.parametrize("rng", ["pcg64", "xorshift128"])
def test_gumbel_is_reproducible_with_a_seed(rng: str) -> None:
    # candle's Gumbel-softmax ignores the seed; ours does not.
    logits = np.array([2.0, 1.5, 1.0, 0.5, 0.0, -1.0], dtype=np.float32)
    chosen = SamplerSettings(draw="gumbel", seed=42, rng=rng)  # type: ignore[arg-type]
    a = Sampler(chosen)
    b = Sampler(chosen)
    first = [a.sample(logits).token_id for _ in range(64)]
    second = [b.sample(logits).token_id for _ in range(64)]
    assert first == second
    assert len(set(first)) >= 3  # and it does sample
    other = Sampler(chosen.with_changes(seed=43))
    assert [other.sample(logits).token_id for _ in range(64)] != first


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
