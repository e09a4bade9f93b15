"""The new stateful units under the sampler's snapshot, restore and live changes.

Adaptive-p keeps its moving average (and the draw it waits to see taken) inside its
unit; min_tokens keeps the reply's length. A snapshot restored gives the same tokens
and the same adapted targets as never having moved on; a live change of the target
or the decay keeps the average; a ban lifts exactly at the reply's N-th token.
"""

from __future__ import annotations

import numpy as np
import pytest

from sampling import Sampler, SamplerSettings, probabilities
from sampling.samplers.adaptive_p import AdaptiveP, AdaptiveSnapshot


def next_target(sampler: Sampler) -> float | None:
    """The target adaptive-p uses at the next step (None when it is off)."""
    unit = sampler.chain.held.get("adaptive_p")
    return unit.current_target if isinstance(unit, AdaptiveP) else None


RNG = np.random.default_rng(11)
LOGITS = [RNG.normal(0.0, 2.5, 300).astype(np.float32) for _ in range(10)]
ENDS = (3, 7)

STATEFUL = [
    SamplerSettings(adaptive_target=0.3, adaptive_decay=0.8, seed=4),
    SamplerSettings(min_p=0.05, adaptive_target=0.6, min_tokens=6, seed=5),
    SamplerSettings(top_k=30, tfs=0.9, smoothing_factor=0.4, min_tokens=3, seed=6),
]


def run(
    sampler: Sampler, logits: list[np.ndarray], history: list[int]
) -> list[tuple[int, float | None]]:
    """Each step's token and adapted target, the token appended to `history`."""
    seen = []
    for step_logits in logits:
        step = sampler.sample(step_logits, history)
        history.append(step.token_id)
        seen.append((step.token_id, step.figure("adaptive_p", "target")))
    return seen


@pytest.mark.parametrize(
    "settings", STATEFUL, ids=["adaptive", "min-p+adaptive+min_tokens", "tfs+smoothing"]
)
def test_restore_then_sample_equals_never_having_moved_on(settings: SamplerSettings) -> None:
    sampler = Sampler(settings, end_of_generation=ENDS)
    history: list[int] = []
    run(sampler, LOGITS[:4], history)
    snapshot = sampler.state()
    expected = run(sampler, LOGITS[4:], list(history))
    sampler.restore(snapshot)
    assert run(sampler, LOGITS[4:], list(history)) == expected
    fresh = Sampler(settings, end_of_generation=ENDS)
    fresh.restore(snapshot)
    assert run(fresh, LOGITS[4:], list(history)) == expected


def test_a_live_change_of_target_keeps_the_average_and_reset_starts_afresh() -> None:
    settings = SamplerSettings(adaptive_target=0.3, adaptive_decay=0.5, seed=1)
    sampler = Sampler(settings)
    history: list[int] = []
    run(sampler, LOGITS[:3], history)
    sampler.sample(LOGITS[3], history)  # settles the third draw, which history took
    weighted = 0.3 / 0.5
    plain = settings.with_changes(adaptive_target=-1.0)  # the original distribution
    for logits, token in zip(LOGITS[:3], history, strict=True):
        weighted = probabilities(logits, plain)[token] + 0.5 * weighted
    unit = sampler.chain.held.get("adaptive_p")
    assert isinstance(unit, AdaptiveP)
    assert unit.weighted_sum == pytest.approx(weighted, abs=1e-12) and unit.total_weight == 2.0
    before = unit.state
    sampler.settings = sampler.settings.with_changes(adaptive_target=0.7)
    moved = sampler.chain.held.get("adaptive_p")
    assert isinstance(moved, AdaptiveP) and moved.target == 0.7
    assert isinstance(before, AdaptiveSnapshot)
    assert (moved.weighted_sum, moved.total_weight) == (before.weighted_sum, before.total_weight)
    sampler.reset()
    assert next_target(sampler) == 0.7  # fresh: the average is the target itself


def test_min_tokens_lifts_its_ban_at_the_nth_token_and_resume_counts_from_a_step() -> None:
    flat = np.zeros(10, dtype=np.float32)
    flat[3] = 5.0  # an end token is by far the most likely
    sampler = Sampler(SamplerSettings(temperature=0.0, min_tokens=4), end_of_generation=ENDS)
    assert [sampler.sample(flat).token_id for _ in range(6)] == [0, 0, 0, 0, 3, 3]
    again = Sampler(SamplerSettings(temperature=0.0, min_tokens=4), end_of_generation=ENDS)
    again.resume(3)
    assert [again.sample(flat).token_id for _ in range(2)] == [0, 3]
