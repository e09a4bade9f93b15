"""Golden tables for the samplers llama.cpp's default chain lacks, on seed 000's logits.

Each expected table is worked out here with plain float64 math (math.exp, sums
written out), from the definition each sampler's module cites, independently of
sampling/'s code paths; the kept sets are also written out by hand.

Seed 000's six logits at T = 1 give (rounded) p = 0.4197, 0.2546, 0.1544, 0.0936,
0.0568, 0.0209: p_max² = 0.1761, entropy 1.4667 nats, and the tail-free running
shares of the normalised second differences 0.5028, 0.8077, 0.9927, 1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sampling import Sampler, SamplerSettings, probabilities
from sampling.built_in import (
    BUILT_IN_UNITS,
    CHAT_ORDER,
    DEFAULT_CHAT_SETTINGS,
    TEMPERATURE_FIRST_ORDER,
)
from sampling.chain import build_chain
from sampling.samplers.adaptive_p import AdaptiveP
from sampling.settings.placement import CUTOFF
from sampling.settings.registry import LLAMA_CPP_ORDER
from tests.golden import LOGITS, TOL, renormalised, softmax


def next_target(sampler: Sampler) -> float | None:
    """The target adaptive-p uses at the next step (None when it is off)."""
    unit = sampler.chain.held.get("adaptive_p")
    return unit.current_target if isinstance(unit, AdaptiveP) else None


P = softmax(LOGITS)


def assert_table(actual: np.ndarray, expected: list[float]) -> None:
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TOL)
    for a, e in zip(actual, expected, strict=True):
        if e == 0.0:
            assert a == 0.0


def test_reference_figures_quoted_above() -> None:
    assert [round(p, 4) for p in P] == [0.4197, 0.2546, 0.1544, 0.0936, 0.0568, 0.0209]
    assert round(P[0] ** 2, 4) == 0.1761
    assert round(-math.fsum(p * math.log(p) for p in P), 4) == 1.4667


# --- top-a: keep p >= a * p_max² ----------------------------------------------------


@pytest.mark.parametrize(
    ("a", "kept"),
    [
        (0.5, [0, 1, 2, 3]),  # floor 0.0881: 0.0936 stays, 0.0568 goes
        (1.0, [0, 1]),  # floor 0.1761
        (0.1, [0, 1, 2, 3, 4, 5]),  # floor 0.0176: all stay
    ],
)
def test_top_a(a: float, kept: list[int]) -> None:
    assert [i for i, p in enumerate(P) if p >= a * P[0] * P[0]] == kept
    settings = SamplerSettings(top_a=a, samplers=("top_a",))
    assert_table(probabilities(np.array(LOGITS), settings), renormalised(P, kept))


def test_top_a_reads_the_kept_set_after_top_k() -> None:
    # Over the top 3, p = 0.5065, 0.3072, 0.1863: a = 0.7 puts the floor at 0.1796.
    top3 = renormalised(P, [0, 1, 2])
    assert top3[2] >= 0.7 * top3[0] ** 2 > P[2]
    settings = SamplerSettings(top_k=3, top_a=0.7, samplers=("top_k", "top_a"))
    assert_table(probabilities(np.array(LOGITS), settings), top3)


# --- tail-free: KoboldCpp's sample_tail_free --------------------------------------------


def tail_free_kept(probs: list[float], z: float) -> int:
    """KoboldCpp's loop: the first i >= 1 whose running share exceeds z keeps i tokens."""
    d2 = [
        abs((probs[i] - probs[i + 1]) - (probs[i + 1] - probs[i + 2]))
        for i in range(len(probs) - 2)
    ]
    total = math.fsum(d2)
    running = 0.0
    for i, value in enumerate(d2):
        running += value / total
        if running > z and i >= 1:
            return i
    return len(probs)


@pytest.mark.parametrize(
    ("z", "count"),
    [
        (0.95, 2),  # shares 0.5028, 0.8077, 0.9927: passes 0.95 at i = 2
        (0.5, 1),  # passes at i = 0 already, but at least i = 1
        (0.9, 2),
        (0.995, 3),  # only the last share (1) passes
    ],
)
def test_tail_free(z: float, count: int) -> None:
    assert tail_free_kept(P, z) == count
    settings = SamplerSettings(tfs=z, samplers=("tfs",))
    assert_table(probabilities(np.array(LOGITS), settings), renormalised(P, list(range(count))))


def test_tail_free_at_temperature_after_it() -> None:
    at_half = softmax(LOGITS, 0.5)
    count = tail_free_kept(at_half, 0.9)
    settings = SamplerSettings(temperature=0.5, tfs=0.9, samplers=("temperature", "tfs"))
    expected = renormalised(at_half, list(range(count)))
    assert_table(probabilities(np.array(LOGITS), settings), expected)


# --- epsilon and eta cutoff: Hugging Face's warpers -----------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "kept"),
    [(0.05, [0, 1, 2, 3, 4]), (0.1, [0, 1, 2]), (0.5, [0])],  # 0.5: none passes, the top stays
)
def test_epsilon_cutoff(epsilon: float, kept: list[int]) -> None:
    settings = SamplerSettings(epsilon_cutoff=epsilon, samplers=("epsilon_cutoff",))
    assert_table(probabilities(np.array(LOGITS), settings), renormalised(P, kept))


@pytest.mark.parametrize(
    ("epsilon", "eta", "kept"),
    [
        (0.1, 0.07295, [0, 1, 2, 3]),  # sqrt(0.1) * exp(-1.4667) = 0.07295 < 0.1
        (0.2, 0.10317, [0, 1, 2]),
        (0.05, 0.05, [0, 1, 2, 3, 4]),  # epsilon itself is the smaller
    ],
)
def test_eta_cutoff(epsilon: float, eta: float, kept: list[int]) -> None:
    entropy = -math.fsum(p * math.log(p) for p in P)
    cutoff = min(epsilon, math.sqrt(epsilon) * math.exp(-entropy))
    assert round(cutoff, 5) == eta
    assert [i for i, p in enumerate(P) if p >= cutoff] == kept
    settings = SamplerSettings(eta_cutoff=epsilon, samplers=("eta_cutoff",))
    assert_table(probabilities(np.array(LOGITS), settings), renormalised(P, kept))


def test_eta_reads_the_entropy_of_the_kept_set() -> None:
    # After top-k 4 the entropy falls, so eta rises: sqrt(0.2) * exp(-H4) = 0.1288.
    top4 = renormalised(P, [0, 1, 2, 3])
    entropy = -math.fsum(p * math.log(p) for p in top4 if p > 0.0)
    cutoff = min(0.2, math.sqrt(0.2) * math.exp(-entropy))
    assert round(cutoff, 4) == 0.1288 and top4[3] < cutoff < top4[2]
    settings = SamplerSettings(top_k=4, eta_cutoff=0.2, samplers=("top_k", "eta_cutoff"))
    assert_table(probabilities(np.array(LOGITS), settings), renormalised(P, [0, 1, 2]))


# --- smoothing: text-generation-webui's quadratic sampling ------------------------------


def smoothed(values: list[float], factor: float, curve: float, temperature: float) -> list[float]:
    """QuadraticSamplingLogitsWarper on the scores at the temperature, then softmax."""
    scores = [v / temperature for v in values]
    top = max(scores)
    k = (3 - curve) / 2
    s = (curve - 1) / 2
    shaped = [-(k * factor * (x - top) ** 2) + (s * factor * (x - top) ** 3) + top for x in scores]
    return softmax(shaped)


@pytest.mark.parametrize(
    ("factor", "curve", "temperature"),
    [(0.5, 1.0, 1.0), (0.5, 2.0, 1.0), (2.0, 3.0, 1.0), (0.3, 1.0, 0.5), (1.0, 1.5, 2.0)],
)
def test_smoothing_after_the_temperature(factor: float, curve: float, temperature: float) -> None:
    settings = SamplerSettings(
        temperature=temperature,
        smoothing_factor=factor,
        smoothing_curve=curve,
        samplers=("temperature", "smoothing"),
    )
    expected = smoothed(LOGITS, factor, curve, temperature)
    assert_table(probabilities(np.array(LOGITS), settings), expected)


def test_smoothing_at_half_flattens_the_head_written_out() -> None:
    # Curve 1: logits 2 - 0.5 d², d = 0, -0.5, -1, -1.5, -2, -3.
    shaped = [2.0 - 0.5 * d * d for d in (0.0, -0.5, -1.0, -1.5, -2.0, -3.0)]
    expected = softmax(shaped)
    assert [round(p, 4) for p in expected] == [0.3378, 0.2981, 0.2049, 0.1097, 0.0457, 0.0038]
    settings = SamplerSettings(smoothing_factor=0.5)  # the default order: after temperature
    running = build_chain(settings).names  # right after the temperature, as it runs
    assert running == ("temperature", "smoothing")
    assert_table(probabilities(np.array(LOGITS), settings), expected)


def test_smoothing_then_a_filter_reads_the_smoothed_distribution() -> None:
    shaped = smoothed(LOGITS, 1.0, 1.0, 1.0)  # weights 1, e^-0.25, e^-1, e^-2.25, e^-4, e^-9
    kept = [i for i, p in enumerate(shaped) if p >= 0.1 * shaped[0]]
    assert kept == [0, 1, 2, 3]
    settings = SamplerSettings(
        smoothing_factor=1.0, min_p=0.1, samplers=("temperature", "smoothing", "min_p")
    )
    assert_table(probabilities(np.array(LOGITS), settings), renormalised(shaped, kept))


# --- adaptive-p: llama.cpp's transform and its moving average ------------------------------


def adaptive(probs: list[float], target: float) -> list[float]:
    """llama.cpp's transform: logit 5 - 10 d² / (1 + d), d = |p - target| / 0.3."""
    logits = []
    for p in probs:
        d = abs(p - target) / 0.3
        logits.append(5.0 - 10.0 * d * d / (1.0 + d))
    return softmax(logits)


@pytest.mark.parametrize("target", [0.0, 0.3, 0.5, 1.0])
def test_adaptive_p_first_step_uses_the_target(target: float) -> None:
    # Fresh: weighted_sum / total_weight = target, so the adapted target is the target.
    settings = SamplerSettings(adaptive_target=target, samplers=("adaptive_p",))
    assert_table(probabilities(np.array(LOGITS), settings), adaptive(P, target))


def test_adaptive_p_at_0_3_written_out() -> None:
    expected = adaptive(P, 0.3)
    assert [round(p, 4) for p in expected] == [0.2221, 0.5678, 0.1419, 0.042, 0.0184, 0.0078]


def test_adaptive_p_after_min_p_transforms_the_kept_set_only() -> None:
    kept = renormalised(P, [0, 1, 2])  # min-p 0.3: p >= 0.1259
    settings = SamplerSettings(min_p=0.3, adaptive_target=0.25, samplers=("min_p", "adaptive_p"))
    expected = [*adaptive([kept[0], kept[1], kept[2]], 0.25), 0.0, 0.0, 0.0]
    assert_table(probabilities(np.array(LOGITS), settings), expected)


def test_adaptive_p_moving_average_over_steps() -> None:
    """Three steps, target 0.4, decay 0.5: the average takes each drawn token's
    original probability, and the next step's target is 2 * 0.4 - average."""
    settings = SamplerSettings(adaptive_target=0.4, adaptive_decay=0.5, samplers=("adaptive_p",))
    sampler = Sampler(settings)
    weighted_sum, total_weight = 0.4 / 0.5, 1.0 / 0.5  # llama.cpp's start
    history: list[int] = []
    for _ in range(3):
        target = min(max(2 * 0.4 - weighted_sum / total_weight, 0.0), 1.0)
        step = sampler.sample(np.array(LOGITS), history)
        assert step.figure("adaptive_p", "target") == pytest.approx(target, abs=1e-15)
        assert step.prob == pytest.approx(adaptive(P, target)[step.token_id], abs=TOL)
        weighted_sum = P[step.token_id] + 0.5 * weighted_sum
        total_weight = 1.0 + 0.5 * total_weight
        history.append(step.token_id)
    unit = sampler.chain.held.get("adaptive_p")
    assert isinstance(unit, AdaptiveP)
    unit.take(history[-1])  # the last draw counts once the sequence takes it
    assert next_target(sampler) == pytest.approx(
        min(max(0.8 - weighted_sum / total_weight, 0.0), 1.0), abs=1e-15
    )


def test_adaptive_p_keeps_its_average_when_another_token_is_taken() -> None:
    settings = SamplerSettings(adaptive_target=0.4, adaptive_decay=0.5, samplers=("adaptive_p",))
    sampler = Sampler(settings)
    step = sampler.sample(np.array(LOGITS), [])
    forced = (step.token_id + 1) % len(LOGITS)
    after_forced = sampler.sample(np.array(LOGITS), [forced])  # not the drawn token
    assert after_forced.figure("adaptive_p", "target") == pytest.approx(0.4, abs=1e-15)
    unit = sampler.chain.held.get("adaptive_p")
    assert isinstance(unit, AdaptiveP)
    unit.take(after_forced.token_id)  # said explicitly: the average moves
    moved = (0.4 / 0.5 * 0.5 + P[after_forced.token_id]) / (1.0 + 0.5 / 0.5)
    assert next_target(sampler) == pytest.approx(0.8 - moved, abs=1e-15)


# --- min_tokens: a ban of the end-of-generation tokens --------------------------------------


def test_min_tokens_bans_the_end_until_the_reply_has_n_tokens() -> None:
    settings = SamplerSettings(min_tokens=2)
    banned = renormalised(P, [1, 2, 3, 4, 5])
    assert_table(probabilities(np.array(LOGITS), settings, end_of_generation=(0,)), banned)
    after = probabilities(np.array(LOGITS), settings, generated=2, end_of_generation=(0,))
    assert_table(after, P)
    sampler = Sampler(SamplerSettings(temperature=0.0, min_tokens=2), end_of_generation=(0, 3))
    steps = [sampler.sample(np.array(LOGITS), []) for _ in range(3)]
    assert [step.token_id for step in steps] == [1, 1, 0]  # greedy: the ban holds twice
    names = {c.token_id: c.removed_by for c in steps[0].candidates}
    assert names[0] == "min_tokens" and names[3] == "min_tokens" and names[1] == ""


# --- where switching one on puts its name --------------------------------------------------


def test_the_default_orders_name_the_new_samplers_where_their_tools_run_them() -> None:
    # Each order names them where they run: smoothing right after the temperature
    # (its placement), adaptive-p last.
    assert TEMPERATURE_FIRST_ORDER[2:4] == ("temperature", "smoothing")
    assert TEMPERATURE_FIRST_ORDER[-2:] == ("xtc", "adaptive_p")
    assert CHAT_ORDER[-3:] == ("temperature", "smoothing", "adaptive_p")
    # Smoothing runs right after the temperature, and adaptive-p last, either way.
    on = {"smoothing_factor": 0.5, "adaptive_target": 0.3, "top_k": 5}
    for order in (TEMPERATURE_FIRST_ORDER, CHAT_ORDER):
        names = build_chain(SamplerSettings(samplers=order, **on)).names
        assert names[names.index("temperature") :][:2] == ("temperature", "smoothing")
        assert names[-1] == "adaptive_p"
    # The cutoffs (placed before min-p), in the registry's order, then min-p.
    cutoffs = (*(unit.name for unit in BUILT_IN_UNITS if unit.placement == CUTOFF), "min_p")
    assert cutoffs[:4] == ("epsilon_cutoff", "eta_cutoff", "tfs", "top_a")
    for order in (TEMPERATURE_FIRST_ORDER, CHAT_ORDER):
        at = order.index("epsilon_cutoff")
        assert order[at : at + len(cutoffs)] == cutoffs
    # Without them (all off), new chats run exactly llama.cpp's chain.
    off = DEFAULT_CHAT_SETTINGS.with_changes(top_a=0.0)
    ran = ("top_k", "top_p", "min_p", "temperature")  # penalties at 1.0 are off
    assert tuple(unit.name for unit in build_chain(off).units) == ran
    assert tuple(n for n in CHAT_ORDER if n in LLAMA_CPP_ORDER) == LLAMA_CPP_ORDER


def test_switching_a_sampler_on_adds_its_name_to_an_order_that_lacks_it() -> None:
    on = {"top_a": 0.2, "eta_cutoff": 2e-3, "smoothing_factor": 0.5, "adaptive_target": 0.4}
    last = SamplerSettings(samplers=LLAMA_CPP_ORDER, **on)
    assert last.samplers[-5:] == ("min_p", "xtc", "temperature", "smoothing", "adaptive_p")
    assert last.samplers[6:8] == ("eta_cutoff", "top_a")
    # An order that names one keeps it where it is; one without an anchor appends.
    given = SamplerSettings(top_a=0.2, samplers=("top_a", "temperature"))
    assert given.samplers == ("top_a", "temperature")
    assert SamplerSettings(tfs=0.9, samplers=("top_k",)).samplers == ("top_k", "tfs")
    # Switched off again, the name stays and the unit does not run.
    off = last.with_changes(top_a=0.0)
    assert "top_a" in off.samplers and "top_a" not in build_chain(off).names
