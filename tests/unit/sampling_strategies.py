"""Hypothesis strategies for the sampler's property tests: logits with ties and
infinities, valid settings with the off values often, and (logits, settings, history)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from sampling import SamplerSettings
from tests.hypothesis_profiles import examples

PROPERTY_SETTINGS = settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

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
