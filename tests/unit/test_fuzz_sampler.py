"""Fuzzing the sampler: any settings the validator accepts, any finite or partly infinite logits.

Every step must be a finite record whose probabilities sum to 1 and keep the top
token, with no numpy warning; logits with nothing to sample from must raise
`LogitsError`. Examples per run come from the hypothesis profile (tests/conftest.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sampling.errors import LogitsError
from sampling.sampler import Sampler, probabilities
from sampling.settings.record import SamplerSettings

pytestmark = pytest.mark.filterwarnings("error")

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

EXTREMES = [0.0, 1e-300, 1e-40, 1e-6, 1.0, 1e6, 1e38, 1e300]
any_float = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def accepted_settings(draw: st.DrawFn) -> SamplerSettings:
    """Settings anywhere in the validator's ranges, extremes included."""
    positive = st.one_of(
        st.sampled_from(EXTREMES[1:]), st.floats(min_value=1e-300, max_value=1e300)
    )
    return SamplerSettings(
        temperature=draw(st.one_of(st.sampled_from(EXTREMES), st.floats(0.0, 1e300))),
        top_k=draw(st.one_of(st.integers(0, 60), st.just(2**70))),
        top_p=draw(st.one_of(st.just(1.0), st.floats(0.0, 1.0, exclude_min=True))),
        top_p_scope=draw(st.sampled_from(["kept", "vocab"])),
        min_p=draw(st.one_of(st.just(0.0), st.floats(0.0, 1.0, exclude_max=True))),
        repeat_penalty=draw(positive),
        repeat_last_n=draw(st.integers(0, 80)),
        frequency_penalty=draw(st.one_of(st.sampled_from([0.0, 1e308, -1e308, -1e39]), any_float)),
        presence_penalty=draw(st.one_of(st.sampled_from([0.0, 1e308, -1e308, -1e39]), any_float)),
        temperature_last=draw(st.booleans()),
        draw=draw(st.sampled_from(["inverse_cdf", "gumbel"])),
        rng=draw(st.sampled_from(["pcg64", "xorshift128"])),
        seed=draw(st.integers(0, 2**64 - 1)),
    )


@st.composite
def hostile_logits(draw: st.DrawFn) -> npt.NDArray[np.floating[Any]]:
    """float32 or float64 logits: ordinary, huge, tied, -inf and +inf mixed in."""
    width = draw(st.sampled_from([32, 64]))
    largest = float(np.finfo(np.float32 if width == 32 else np.float64).max)
    element = st.one_of(
        st.floats(-50.0, 50.0, width=width),
        st.floats(allow_nan=False, allow_infinity=True, width=width),
        st.sampled_from([largest, -largest, -math.inf, 0.0]),
    )
    values = draw(st.lists(element, min_size=1, max_size=60))
    return np.array(values, dtype=np.float32 if width == 32 else np.float64)


@HEALTH
@given(hostile_logits(), accepted_settings(), st.data())
def test_any_accepted_settings_on_any_logits_give_a_finite_step(
    logits: npt.NDArray[np.floating[Any]], chosen: SamplerSettings, data: st.DataObject
) -> None:
    history = data.draw(st.lists(st.integers(0, logits.shape[0] - 1), max_size=100))
    sampler = Sampler(chosen, n_candidates=8)
    if not (logits > -math.inf).any():
        with pytest.raises(LogitsError, match="no finite value"):
            sampler.sample(logits, history)
        return
    step = sampler.sample(logits, history)
    assert math.isfinite(step.prob) and 0.0 < step.prob <= 1.0
    assert math.isfinite(step.entropy) and step.entropy >= 0.0
    table = step.table
    assert not np.isnan(table.logits).any() and not np.isposinf(table.logits).any()
    assert np.isfinite(table.prob_before).all() and np.isfinite(table.prob_after).all()
    assert table.prob_after[0] > 0.0  # the top token is always kept
    assert 1 <= step.n_kept <= logits.shape[0]
    probs = probabilities(logits, chosen, history)
    assert np.isfinite(probs).all() and (probs >= 0.0).all()
    assert probs.sum() == pytest.approx(1.0, abs=1e-9)
    assert probs[step.token_id] > 0.0
    assert probs[int(table.token_ids[0])] > 0.0


@HEALTH
@given(
    st.lists(
        st.one_of(
            st.integers(),
            st.floats(),
            st.text(max_size=3),
            st.none(),
            st.booleans(),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_a_history_of_anything_is_accepted_or_a_logits_error(history: list[object]) -> None:
    settings_ = SamplerSettings(repeat_penalty=1.5, repeat_last_n=8)
    logits = np.zeros(16, dtype=np.float32)
    try:
        step = Sampler(settings_).sample(logits, history)  # type: ignore[arg-type]
    except LogitsError:
        return
    # Only integer ids inside the vocabulary get this far.
    assert all(type(item) is int and 0 <= item < 16 for item in history)
    assert 0 <= step.token_id < 16
