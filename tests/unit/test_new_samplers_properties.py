"""Properties of the samplers llama.cpp's default chain lacks, on random logits (hypothesis).

Each case runs top-k (sometimes), the temperature, then one of the new samplers,
and checks the distribution against a slow reference written here: a full sort of
the vocabulary (ties by lower id) and each sampler's definition as the module it
lives in cites it. A case whose cut sits within rounding of its threshold is
skipped: no exact answer exists there.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from sampling import Sampler, SamplerSettings, probabilities
from sampling.samplers.tail_free import head_count, tail_free_count
from tests.unit.sampling_strategies import PROPERTY_SETTINGS, logit_arrays
from tests.unit.test_sampling_properties import descending_order

Reference = Callable[[list[float]], list[float]]
"""The sampler on the kept set's probabilities in descending order: their new values."""

MARGIN = 1e-9


class Boundary(Exception):
    """A cut decision sits within rounding of its threshold."""


def keep_at_least(probs: list[float], cutoff: float) -> list[float]:
    """Keep p >= cutoff (the top and its ties always), renormalised."""
    for p in probs:
        if p > 0.0 and abs(p - cutoff) <= MARGIN * cutoff:
            raise Boundary
    kept = [p if (p >= cutoff or p == probs[0]) else 0.0 for p in probs]
    total = math.fsum(kept)
    return [p / total for p in kept]


def top_a(a: float) -> Reference:
    return lambda probs: keep_at_least(probs, a * probs[0] * probs[0])


def epsilon(value: float) -> Reference:
    return lambda probs: keep_at_least(probs, value)


def eta(value: float) -> Reference:
    def apply(probs: list[float]) -> list[float]:
        entropy = -math.fsum(p * math.log(p) for p in probs if p > 0.0)
        return keep_at_least(probs, min(value, math.sqrt(value) * math.exp(-entropy)))

    return apply


def tail_free(z: float) -> Reference:
    def apply(probs: list[float]) -> list[float]:
        n = len(probs)
        count = n
        if n > 2:
            d2 = [
                abs((probs[i] - probs[i + 1]) - (probs[i + 1] - probs[i + 2])) for i in range(n - 2)
            ]
            total = math.fsum(d2)
            shares = [v / total for v in d2] if total > 1e-6 else [1.0 / len(d2)] * len(d2)
            running = 0.0
            for i, share in enumerate(shares):
                running += share
                if i >= 1 and abs(running - z) <= MARGIN:
                    raise Boundary
                if running > z and i >= 1:
                    count = i
                    break
        kept = probs[:count] + [0.0] * (n - count)
        total = math.fsum(kept)
        return [p / total for p in kept]

    return apply


def adaptive(target: float) -> Reference:
    def apply(probs: list[float]) -> list[float]:
        logits = [
            5.0 - 10.0 * (d := abs(p - target) / 0.3) * d / (1.0 + d) if p >= 0.0 else -math.inf
            for p in probs
        ]
        top = max(logits)
        weights = [math.exp(v - top) for v in logits]
        total = math.fsum(weights)
        return [w / total for w in weights]

    return apply


@st.composite
def new_sampler(draw: st.DrawFn) -> tuple[str, SamplerSettings, Reference | None]:
    """One new sampler's settings and its reference (None: smoothing, done on logits)."""
    name = draw(st.sampled_from(["top_a", "epsilon", "eta", "tfs", "smoothing", "adaptive"]))
    if name == "top_a":
        a = draw(st.floats(0.01, 1.0))
        return "top_a", SamplerSettings(top_a=a), top_a(a)
    if name == "epsilon":
        value = draw(st.sampled_from([3e-4, 0.01, 0.1, 0.5]) | st.floats(1e-6, 0.9))
        return "epsilon_cutoff", SamplerSettings(epsilon_cutoff=value), epsilon(value)
    if name == "eta":
        value = draw(st.sampled_from([3e-4, 4e-3, 0.1]) | st.floats(1e-6, 0.9))
        return "eta_cutoff", SamplerSettings(eta_cutoff=value), eta(value)
    if name == "tfs":
        z = draw(st.floats(0.0, 0.999))
        return "tfs", SamplerSettings(tfs=z), tail_free(z)
    if name == "smoothing":
        factor = draw(st.floats(0.01, 5.0))
        curve = draw(st.floats(1.0, 3.0))
        return "smoothing", SamplerSettings(smoothing_factor=factor, smoothing_curve=curve), None
    target = draw(st.floats(0.0, 1.0))
    return "adaptive_p", SamplerSettings(adaptive_target=target), adaptive(target)


@st.composite
def cases(draw: st.DrawFn) -> tuple[np.ndarray, SamplerSettings, Reference | None]:
    logits = draw(logit_arrays(200))
    name, settings, reference = draw(new_sampler())
    temperature = draw(st.sampled_from([1.0, 0.5, 2.0]) | st.floats(0.2, 4.0))
    top_k = draw(st.sampled_from([0, 0, 3, 40]))
    order = ("top_k", "temperature", name) if top_k else ("temperature", name)
    return (
        logits,
        settings.with_changes(temperature=temperature, top_k=top_k, samplers=order),
        reference,
    )


def finite_logits(logits: np.ndarray) -> np.ndarray:
    """+inf counts as the argmax: +inf becomes 0, everything else -inf (DESIGN.md)."""
    x = logits.astype(np.float64)
    if np.isposinf(x).any():
        x = np.where(np.isposinf(x), 0.0, -np.inf)
    return x


def reference_probabilities(
    logits: np.ndarray, settings: SamplerSettings, reference: Reference | None
) -> np.ndarray:
    """top-k, the temperature, then the sampler, on a full sort in float64."""
    x = finite_logits(logits)
    order = descending_order(x)
    if settings.top_k:
        order = order[: settings.top_k]
    scaled = [float(x[token]) / settings.temperature for token in order]
    top = scaled[0]
    if reference is None:  # smoothing: the transform of the scaled logits, then softmax
        k = (3.0 - settings.smoothing_curve) / 2.0
        s = (settings.smoothing_curve - 1.0) / 2.0
        f = settings.smoothing_factor
        scaled = [
            -(k * f * (v - top) ** 2) + s * f * (v - top) ** 3 + top if v != -math.inf else v
            for v in scaled
        ]
        top = max(scaled)
    weights = [math.exp(v - top) if v != -math.inf else 0.0 for v in scaled]
    total = math.fsum(weights)
    probs = [w / total for w in weights]
    if reference is not None:
        if settings.adaptive_target >= 0.0:  # a -inf logit takes no part in adaptive-p
            probs = [p if v != -math.inf else -1.0 for p, v in zip(probs, scaled, strict=True)]
        probs = reference(probs)
    result = np.zeros(x.shape[0])
    for token, p in zip(order, probs, strict=True):
        result[token] = p
    return result


@PROPERTY_SETTINGS
@given(cases())
def test_each_new_sampler_is_a_distribution_keeping_the_argmax(
    case: tuple[np.ndarray, SamplerSettings, Reference | None],
) -> None:
    logits, settings, _ = case
    before = logits.copy()
    probs = probabilities(logits, settings)
    np.testing.assert_array_equal(logits, before)  # never mutated
    assert probs.dtype == np.float64 and (probs >= 0.0).all()
    assert abs(math.fsum(probs) - 1.0) < 1e-9
    assert np.count_nonzero(probs) >= 1
    assert probs[int(np.argmax(finite_logits(logits)))] > 0.0


@PROPERTY_SETTINGS
@given(cases())
def test_each_new_sampler_matches_its_definition_on_a_full_sort(
    case: tuple[np.ndarray, SamplerSettings, Reference | None],
) -> None:
    logits, settings, reference = case
    try:
        expected = reference_probabilities(logits, settings, reference)
    except Boundary:
        assume(False)
        return
    actual = probabilities(logits, settings)
    assert np.array_equal(np.flatnonzero(actual), np.flatnonzero(expected))
    np.testing.assert_allclose(actual, expected, rtol=1e-7, atol=1e-12)


@PROPERTY_SETTINGS
@given(cases(), st.integers(0, 2**32 - 1))
def test_the_sampler_draws_a_kept_token_and_records_its_probability(
    case: tuple[np.ndarray, SamplerSettings, Reference | None], seed: int
) -> None:
    logits, settings, _ = case
    settings = settings.with_changes(seed=seed)
    expected = probabilities(logits, settings)
    step = Sampler(settings).sample(logits)
    assert expected[step.token_id] > 0.0
    assert step.prob == expected[step.token_id]
    assert (step.figure("adaptive_p", "target") is not None) == (settings.adaptive_target >= 0.0)


@PROPERTY_SETTINGS
@given(logit_arrays(120), st.integers(1, 6), st.integers(0, 8))
def test_min_tokens_bans_exactly_the_end_tokens_while_the_reply_is_short(
    logits: np.ndarray, count: int, generated: int
) -> None:
    x = finite_logits(logits)
    ends = tuple(int(t) for t in np.flatnonzero(np.isfinite(x))[1:3])  # never every token
    settings = SamplerSettings(min_tokens=count)
    probs = probabilities(logits, settings, generated=generated, end_of_generation=ends)
    plain = probabilities(logits, SamplerSettings())
    if generated >= count:
        np.testing.assert_array_equal(probs, plain)
        return
    assert all(probs[token] == 0.0 for token in ends)
    others = plain.copy()
    others[list(ends)] = 0.0
    np.testing.assert_allclose(probs, others / others.sum(), rtol=1e-9, atol=1e-15)


@PROPERTY_SETTINGS
@given(
    st.integers(0, 2**32 - 1),
    st.integers(50, 3000),
    st.sampled_from([1.0, 3.0, 8.0]),
    st.floats(0.0, 0.999),
    st.integers(5, 60),
)
def test_tail_free_from_the_head_alone_agrees_with_the_whole_sort(
    seed: int, size: int, spread: float, z: float, head: int
) -> None:
    probs = np.sort(np.random.default_rng(seed).standard_normal(size) * spread)[::-1]
    probs = np.exp(probs - probs[0])
    probs /= probs.sum()
    counted = head_count(probs[: min(head, size)], z)
    assert counted is None or counted == tail_free_count(probs, z)
