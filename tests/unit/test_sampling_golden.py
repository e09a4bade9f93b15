"""Golden tables: exact probabilities on seed 000's six logits, computed by hand here.

Every expected value is written out with plain float64 math (math.exp, explicit
prefix sums), independent of sampling/'s code paths, and compared to 1e-12.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sampling import LogitsError, SamplerSettings, penalized_logits, probabilities
from tests.golden import LOGITS, TOL, renormalised, softmax


def nucleus(probs: list[float], p: float, order: list[int]) -> list[int]:
    """Shortest prefix of `order` whose mass reaches p (the crossing token kept)."""
    kept: list[int] = []
    cumulative = 0.0
    for token in order:
        if cumulative >= p:
            break
        kept.append(token)
        cumulative += probs[token]
    return kept


def assert_table(actual: np.ndarray, expected: list[float]) -> None:
    assert actual.dtype == np.float64
    assert actual.shape == (len(expected),)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TOL)
    # Cut tokens are exactly zero, not merely small.
    for a, e in zip(actual, expected, strict=True):
        if e == 0.0:
            assert a == 0.0


def logits32() -> np.ndarray:
    return np.array(LOGITS, dtype=np.float32)


# Seed 000's observed frequencies (200 000 draws each), rounded to 4 decimals.
SEED_000_TABLE = {
    "All t=1": (
        SamplerSettings(temperature=1.0),
        [0.4209, 0.2540, 0.1539, 0.0936, 0.0566, 0.0211],
    ),
    "All t=0.5": (
        SamplerSettings(temperature=0.5),
        [0.6353, 0.2341, 0.0856, 0.0319, 0.0117, 0.0015],
    ),
    "TopK k=2": (
        SamplerSettings(top_k=2),
        [0.6228, 0.3772, 0.0, 0.0, 0.0, 0.0],
    ),
    "TopP p=0.7": (
        SamplerSettings(top_p=0.7),
        [0.5066, 0.3076, 0.1859, 0.0, 0.0, 0.0],
    ),
    "TopP p=0.8": (
        SamplerSettings(top_p=0.8),
        [0.5066, 0.3076, 0.1859, 0.0, 0.0, 0.0],
    ),
    "TopKThenTopP k=3 p=0.6": (
        SamplerSettings(top_k=3, top_p=0.6, top_p_scope="vocab"),
        [0.6228, 0.3772, 0.0, 0.0, 0.0, 0.0],
    ),
    "TopKThenTopP k=3 p=0.75": (
        SamplerSettings(top_k=3, top_p=0.75, top_p_scope="vocab"),
        [0.5066, 0.3076, 0.1859, 0.0, 0.0, 0.0],
    ),
    "TopKThenTopP k=3 p=0.9": (
        SamplerSettings(top_k=3, top_p=0.9, top_p_scope="vocab"),
        [0.5066, 0.3076, 0.1859, 0.0, 0.0, 0.0],
    ),
}


@pytest.mark.parametrize("name", sorted(SEED_000_TABLE))
def test_seed_000_observed_frequencies_match_exact_values(name: str) -> None:
    settings, observed = SEED_000_TABLE[name]
    exact = probabilities(logits32(), settings)
    # candle's rows are frequencies of 200 000 draws: within 0.003 of the truth.
    np.testing.assert_allclose(exact, observed, rtol=0, atol=0.003)
    assert [p == 0.0 for p in exact] == [o == 0.0 for o in observed]


def test_softmax_row_of_seed_000() -> None:
    exact = probabilities(logits32(), SamplerSettings())
    np.testing.assert_allclose(
        exact, [0.4197, 0.2546, 0.1544, 0.0936, 0.0568, 0.0209], rtol=0, atol=6e-5
    )


@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0, 0.1])
def test_all_at_temperature(temperature: float) -> None:
    expected = softmax(LOGITS, temperature)
    assert_table(probabilities(logits32(), SamplerSettings(temperature=temperature)), expected)
    assert_table(
        probabilities(np.array(LOGITS), SamplerSettings(temperature=temperature)), expected
    )


def test_all_t_half_is_logits_times_two() -> None:
    doubled = [2 * x for x in LOGITS]
    assert_table(probabilities(logits32(), SamplerSettings(temperature=0.5)), softmax(doubled))


def test_top_k_2() -> None:
    p = softmax(LOGITS)
    expected = [p[0] / (p[0] + p[1]), p[1] / (p[0] + p[1]), 0.0, 0.0, 0.0, 0.0]
    assert_table(probabilities(logits32(), SamplerSettings(top_k=2)), expected)
    # Written out: 0.4197 / 0.6743 = 0.622 as seed 000 says.
    assert abs(expected[0] - 0.6224) < 1e-3


@pytest.mark.parametrize("top_p", [0.7, 0.8])
def test_top_p_keeps_three(top_p: float) -> None:
    p = softmax(LOGITS)
    # Two tokens reach 0.6743 < p; the third crosses both 0.7 and 0.8 (0.8287).
    assert p[0] + p[1] < top_p < p[0] + p[1] + p[2]
    expected = renormalised(p, [0, 1, 2])
    assert_table(probabilities(logits32(), SamplerSettings(top_p=top_p)), expected)
    assert nucleus(p, top_p, list(range(6))) == [0, 1, 2]


@pytest.mark.parametrize("top_p", [0.3, 0.5, 0.9, 0.95, 0.99])
def test_top_p_matches_nucleus_by_hand(top_p: float) -> None:
    p = softmax(LOGITS)
    expected = renormalised(p, nucleus(p, top_p, list(range(6))))
    assert_table(probabilities(logits32(), SamplerSettings(top_p=top_p)), expected)


def test_top_p_crossing_token_is_kept() -> None:
    # p = 0.3 < p_0 = 0.4197: the argmax alone crosses it.
    expected = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert_table(probabilities(logits32(), SamplerSettings(top_p=0.3)), expected)


# TopKThenTopP k=3: (p, tokens kept in "vocab" scope, tokens kept in "kept" scope).
# p_0..p_2 = 0.4197, 0.2546, 0.1544 (sum 0.8287); within the top 3 renormalised:
# 0.5065, 0.3072, 0.1863 (first two 0.8137).
TOP_K_THEN_TOP_P = [
    (0.6, 2, 2),
    (0.75, 3, 2),
    (0.9, 3, 3),
]


@pytest.mark.parametrize(("top_p", "n_vocab_scope", "n_kept_scope"), TOP_K_THEN_TOP_P)
def test_top_k_then_top_p_both_scopes(top_p: float, n_vocab_scope: int, n_kept_scope: int) -> None:
    p = softmax(LOGITS)
    top3 = [0, 1, 2]
    # "vocab" (candle): p against the whole vocabulary's mass; no cut when p >= sum.
    vocab_mass = math.fsum(p[i] for i in top3)
    vocab_kept = top3 if top_p >= vocab_mass else nucleus(p, top_p, top3)
    assert len(vocab_kept) == n_vocab_scope
    # "kept" (llama.cpp, HF): p measured after top-k renormalises.
    within = renormalised(p, top3)
    kept_kept = nucleus(within, top_p, top3)
    assert len(kept_kept) == n_kept_scope

    vocab = probabilities(logits32(), SamplerSettings(top_k=3, top_p=top_p, top_p_scope="vocab"))
    kept = probabilities(logits32(), SamplerSettings(top_k=3, top_p=top_p, top_p_scope="kept"))
    assert_table(vocab, renormalised(p, vocab_kept))
    assert_table(kept, renormalised(p, kept_kept))


def test_scopes_differ_at_p_075() -> None:
    vocab = probabilities(logits32(), SamplerSettings(top_k=3, top_p=0.75, top_p_scope="vocab"))
    kept = probabilities(logits32(), SamplerSettings(top_k=3, top_p=0.75, top_p_scope="kept"))
    assert np.count_nonzero(vocab) == 3
    assert np.count_nonzero(kept) == 2


@pytest.mark.parametrize(("min_p", "n_kept"), [(0.3, 3), (0.5, 2), (0.05, 5), (0.01, 6)])
def test_min_p(min_p: float, n_kept: int) -> None:
    p = softmax(LOGITS)
    kept = [i for i in range(6) if p[i] >= min_p * max(p)]
    assert len(kept) == n_kept
    assert_table(probabilities(logits32(), SamplerSettings(min_p=min_p)), renormalised(p, kept))


def test_min_p_at_temperature_first() -> None:
    # Temperature first: min-p reads softmax(x / 0.5); ratios exp(2 (x - 2)).
    p = softmax(LOGITS, 0.5)
    kept = [i for i in range(6) if p[i] >= 0.3 * max(p)]
    assert kept == [0, 1]
    settings = SamplerSettings(temperature=0.5, min_p=0.3)
    assert_table(probabilities(logits32(), settings), renormalised(p, kept))


def test_temperature_last_changes_min_p() -> None:
    # temperature_last: min-p reads T=1 (keeps 3), the temperature shapes the three.
    at_one = softmax(LOGITS)
    kept = [i for i in range(6) if at_one[i] >= 0.3 * max(at_one)]
    assert kept == [0, 1, 2]
    shaped = renormalised(softmax(LOGITS, 0.5), kept)
    last = probabilities(
        logits32(), SamplerSettings(temperature=0.5, min_p=0.3, temperature_last=True)
    )
    first = probabilities(
        logits32(), SamplerSettings(temperature=0.5, min_p=0.3, temperature_last=False)
    )
    assert_table(last, shaped)
    assert np.count_nonzero(last) == 3
    assert np.count_nonzero(first) == 2


def test_temperature_last_changes_top_p() -> None:
    # T = 2 flattens: temperature first, 0.7 needs more tokens than at T = 1.
    hot = softmax(LOGITS, 2.0)
    cold = softmax(LOGITS, 1.0)
    first_kept = nucleus(hot, 0.7, list(range(6)))
    last_kept = nucleus(cold, 0.7, list(range(6)))
    assert len(first_kept) == 4 and len(last_kept) == 3
    first = probabilities(logits32(), SamplerSettings(temperature=2.0, top_p=0.7))
    last = probabilities(
        logits32(), SamplerSettings(temperature=2.0, top_p=0.7, temperature_last=True)
    )
    assert_table(first, renormalised(hot, first_kept))
    assert_table(last, renormalised(hot, last_kept))


def test_temperature_last_does_not_change_top_k() -> None:
    p = softmax(LOGITS, 0.5)
    for last in (False, True):
        settings = SamplerSettings(temperature=0.5, top_k=2, temperature_last=last)
        assert_table(probabilities(logits32(), settings), renormalised(p, [0, 1]))


def test_chain_top_k_top_p_min_p() -> None:
    # top-k 5 -> top-p 0.9 within the 5 -> min-p 0.25 of the max.
    p = softmax(LOGITS)
    top5 = [0, 1, 2, 3, 4]
    after_p = nucleus(renormalised(p, top5), 0.9, top5)
    after_min = [i for i in after_p if p[i] >= 0.25 * p[0]]
    assert after_p == [0, 1, 2, 3] and after_min == [0, 1, 2]
    settings = SamplerSettings(top_k=5, top_p=0.9, min_p=0.25)
    assert_table(probabilities(logits32(), settings), renormalised(p, after_min))


@pytest.mark.parametrize(
    "settings",
    [
        SamplerSettings(temperature=0.0),
        SamplerSettings(temperature=0.0, top_k=3, top_p=0.5, min_p=0.2),
        SamplerSettings(temperature=1e-7, top_p=0.9),
    ],
)
def test_greedy_table(settings: SamplerSettings) -> None:
    assert_table(probabilities(logits32(), settings), [1.0, 0.0, 0.0, 0.0, 0.0, 0.0])


# --- penalties ------------------------------------------------------------------


def penalise_by_hand(
    logits: list[float],
    history: list[int],
    *,
    repeat_penalty: float = 1.0,
    last_n: int,
    frequency: float = 0.0,
    presence: float = 0.0,
) -> list[float]:
    window = history[-last_n:] if last_n > 0 else []
    result = list(logits)
    for token in sorted(set(window)):
        value = result[token]
        value = value / repeat_penalty if value > 0 else value * repeat_penalty
        value -= window.count(token) * frequency + presence
        result[token] = value
    return result


def test_seed_000_repeat_penalty_example() -> None:
    settings = SamplerSettings(repeat_penalty=2.0, repeat_last_n=64)
    logits = np.array([2.0, -2.0, 0.5], dtype=np.float32)
    out = penalized_logits(logits, settings, [0, 1, 1, 1])
    np.testing.assert_array_equal(out, [1.0, -4.0, 0.5])
    # The input is untouched.
    np.testing.assert_array_equal(logits, [2.0, -2.0, 0.5])
    assert penalise_by_hand([2.0, -2.0, 0.5], [0, 1, 1, 1], repeat_penalty=2.0, last_n=64) == [
        1.0,
        -4.0,
        0.5,
    ]


def test_seed_000_repeat_penalty_out_of_vocabulary_id_is_an_error() -> None:
    # candle silently skips id 7 in a 3-token vocabulary; we say what is wrong.
    settings = SamplerSettings(repeat_penalty=2.0, repeat_last_n=64)
    logits = np.array([2.0, -2.0, 0.5], dtype=np.float32)
    with pytest.raises(LogitsError, match=r"history token id 7 .*vocabulary of 3 tokens"):
        penalized_logits(logits, settings, [0, 1, 1, 1, 7])
    with pytest.raises(LogitsError, match="7"):
        probabilities(logits, settings, [0, 1, 1, 1, 7])


def test_negative_history_id_is_an_error() -> None:
    settings = SamplerSettings(repeat_penalty=2.0, repeat_last_n=64)
    with pytest.raises(LogitsError, match="-1"):
        probabilities(logits32(), settings, [0, -1])


def test_repeat_penalty_probabilities() -> None:
    settings = SamplerSettings(repeat_penalty=2.0, repeat_last_n=64)
    penalised = penalise_by_hand(LOGITS, [0, 4, 5, 5], repeat_penalty=2.0, last_n=64)
    assert penalised == [1.0, 1.5, 1.0, 0.5, 0.0, -2.0]
    assert_table(probabilities(logits32(), settings, [0, 4, 5, 5]), softmax(penalised))


def test_frequency_and_presence_penalties() -> None:
    history = [1, 1, 1, 3, 0, 3]
    settings = SamplerSettings(repeat_last_n=64, frequency_penalty=0.25, presence_penalty=0.5)
    penalised = penalise_by_hand(LOGITS, history, last_n=64, frequency=0.25, presence=0.5)
    # count * f + presence subtracted: token 1 seen 3 times, 3 twice, 0 once.
    assert penalised == [2.0 - 0.75, 1.5 - 1.25, 1.0, 0.5 - 1.0, 0.0, -1.0]
    out = penalized_logits(np.array(LOGITS), settings, history)
    np.testing.assert_allclose(out, penalised, rtol=0, atol=TOL)
    assert_table(probabilities(logits32(), settings, history), softmax(penalised))


def test_all_three_penalties_together() -> None:
    history = [5, 0, 0, 2]
    settings = SamplerSettings(
        repeat_penalty=1.5, repeat_last_n=64, frequency_penalty=0.1, presence_penalty=0.2
    )
    penalised = penalise_by_hand(
        LOGITS, history, repeat_penalty=1.5, last_n=64, frequency=0.1, presence=0.2
    )
    # -1.0 (token 5) is multiplied: -1.5 - 0.1 - 0.2.
    assert abs(penalised[5] - (-1.8)) < 1e-12
    out = penalized_logits(np.array(LOGITS), settings, history)
    np.testing.assert_allclose(out, penalised, rtol=0, atol=TOL)
    assert_table(probabilities(np.array(LOGITS), settings, history), softmax(penalised))


def test_repeat_last_n_window() -> None:
    # Only the last 2 tokens (3, 3) count; 0 and 1 are outside the window.
    history = [0, 1, 3, 3]
    settings = SamplerSettings(repeat_penalty=2.0, repeat_last_n=2, frequency_penalty=0.5)
    penalised = penalise_by_hand(LOGITS, history, repeat_penalty=2.0, last_n=2, frequency=0.5)
    assert penalised == [2.0, 1.5, 1.0, 0.25 - 1.0, 0.0, -1.0]
    np.testing.assert_allclose(
        penalized_logits(np.array(LOGITS), settings, history), penalised, rtol=0, atol=TOL
    )
    assert_table(probabilities(logits32(), settings, history), softmax(penalised))


def test_repeat_last_n_zero_means_no_penalty() -> None:
    settings = SamplerSettings(repeat_penalty=2.0, repeat_last_n=0, presence_penalty=1.0)
    assert_table(probabilities(logits32(), settings, [0, 0, 1]), softmax(LOGITS))


def test_window_longer_than_history() -> None:
    settings = SamplerSettings(repeat_penalty=2.0, repeat_last_n=1000)
    penalised = penalise_by_hand(LOGITS, [0], repeat_penalty=2.0, last_n=1000)
    assert_table(probabilities(logits32(), settings, [0]), softmax(penalised))


def test_history_as_numpy_array() -> None:
    settings = SamplerSettings(repeat_penalty=2.0, repeat_last_n=3)
    history = np.array([5, 0, 1, 1], dtype=np.int32)
    penalised = penalise_by_hand(LOGITS, [5, 0, 1, 1], repeat_penalty=2.0, last_n=3)
    assert_table(probabilities(logits32(), settings, history), softmax(penalised))


def test_penalty_changes_the_argmax() -> None:
    # Penalising token 0 (2.0 -> 0.5) makes token 1 (1.5) the greedy choice.
    settings = SamplerSettings(temperature=0.0, repeat_penalty=4.0, repeat_last_n=8)
    assert_table(probabilities(logits32(), settings, [0]), [0.0, 1.0, 0.0, 0.0, 0.0, 0.0])


def test_float32_logits_with_inexact_differences() -> None:
    # Differences such as 0.1 - 3.3 are not exact in float32: the probabilities
    # must still be float64 softmax of the float32 values, in every code path.
    raw = np.array([3.3, 0.1, -7.3, -20.123, 1.7], dtype=np.float32)
    values = [float(v) for v in raw]
    for temperature in (1.0, 0.3):
        expected = softmax(values, temperature)
        for settings in (
            SamplerSettings(temperature=temperature),  # nothing cut
            SamplerSettings(temperature=temperature, top_k=5),  # k = vocabulary
            SamplerSettings(temperature=temperature, top_k=4),  # something cut
        ):
            kept = sorted(range(5), key=lambda i: -values[i])[: settings.top_k or 5]
            assert_table(probabilities(raw, settings), renormalised(expected, kept))


def test_candle_mode_one_liners_reproduce_seed_000() -> None:
    from sampling import modes

    p = softmax(LOGITS)
    assert_table(probabilities(logits32(), modes.candle_all(1.0)), p)
    assert_table(probabilities(logits32(), modes.candle_all(0.5)), softmax(LOGITS, 0.5))
    assert_table(probabilities(logits32(), modes.candle_top_k(2, 1.0)), renormalised(p, [0, 1]))
    assert_table(
        probabilities(logits32(), modes.candle_top_p(0.7, 1.0)), renormalised(p, [0, 1, 2])
    )
    for top_p, n in ((0.6, 2), (0.75, 3), (0.9, 3)):
        settings = modes.candle_top_k_then_top_p(3, top_p, 1.0)
        assert_table(probabilities(logits32(), settings), renormalised(p, list(range(n))))
    # candle: TopP with p <= 0 or >= 1 does not cut; temperature 0 is greedy here.
    assert_table(probabilities(logits32(), modes.candle_top_p(0.0, 1.0)), p)
    assert_table(probabilities(logits32(), modes.candle_top_p(1.5, 1.0)), p)
    greedy = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert_table(probabilities(logits32(), modes.candle_all(0.0)), greedy)
    assert_table(probabilities(logits32(), modes.candle_new(1, None, None)), greedy)
    assert_table(probabilities(logits32(), modes.candle_new(1, 0.0, 0.9)), greedy)
    assert_table(probabilities(logits32(), modes.candle_new(1, 1.0, None)), p)
    assert_table(
        probabilities(logits32(), modes.candle_new(1, 1.0, 0.7)), renormalised(p, [0, 1, 2])
    )
