"""The sampler's random stream: one seed gives one stream whatever the settings,
settings swapped between tokens do not reseed it, reset restarts it, every seed has
its own (candle's seed bugs not copied), a Gumbel draw is seeded, a given uniform
draws as the stream's own would, and draws follow the distribution (chi-square)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampling import Sampler, SamplerSettings, probabilities
from tests.unit.sampling_strategies import PROPERTY_SETTINGS, cases, logit_arrays, sampler_settings


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
        swapped.settings = chosen.with_changes()  # a new, equal-valued object
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


@PROPERTY_SETTINGS
@given(cases(max_size=60))
def test_a_given_uniform_draws_as_the_streams_own(
    case: tuple[np.ndarray, SamplerSettings, list[int]],
) -> None:
    """What-if's principle: a step's uniform, given to a sampler of another stream
    under the same settings, draws the step's token."""
    logits, chosen, history = case
    step = Sampler(chosen).sample(logits, history)
    other_stream = Sampler(chosen.with_changes(seed=chosen.seed ^ 1))
    again = other_stream.sample(logits, history, uniform=step.draw)
    assert again.token_id == step.token_id or step.draw is None  # None: greedy, Gumbel
    assert again.draw == step.draw or step.draw is None


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
