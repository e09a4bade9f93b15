"""Where two runs fork, and whether it was a near-tie (sampling.analysis.fork)."""

from __future__ import annotations

import numpy as np
import pytest

from sampling import Sampler
from sampling.analysis.fork import find_fork, first_difference, fork_summary, logit_gap
from sampling.records import Step
from sampling.settings.record import SamplerSettings


def greedy_step(logits: list[float]) -> Step:
    return Sampler(SamplerSettings(temperature=0.0)).sample(np.array(logits, dtype=np.float32))


def softmax(logits: list[float]) -> np.ndarray:
    x = np.array(logits, dtype=np.float64)
    e = np.exp(x - x.max())
    return e / e.sum()


def test_first_difference() -> None:
    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2, 3], [1, 5, 3]) == 1
    assert first_difference([1, 2], [1, 2, 3]) == 2
    assert first_difference([], [4]) == 0


def test_near_tie() -> None:
    """Two runs whose top two are 0.02 apart in logit: each took its own top token."""
    a_logits = [2.00, 1.98, 0.0, -1.0]
    b_logits = [1.98, 2.00, 0.0, -1.0]
    steps = (greedy_step(a_logits), greedy_step(b_logits))
    fork = find_fork(([7, 0, 5], [7, 1, 5]), (steps[0], steps[1]))
    assert fork.index == 1
    assert fork.verdict == "near-tie"
    p = softmax(a_logits)
    a, b = fork.runs
    assert (a.token_id, b.token_id) == (0, 1)
    assert a.top_ids == (0, 1) and b.top_ids == (1, 0)
    assert a.margin == pytest.approx(p[0] - p[1], abs=1e-6)
    assert b.margin == pytest.approx(p[0] - p[1], abs=1e-6)
    assert a.logit_gap is not None and b.logit_gap is not None
    assert a.logit_gap.value == pytest.approx(0.02, abs=1e-6) and a.logit_gap.bound == "="
    assert b.logit_gap.value == pytest.approx(-0.02, abs=1e-6)
    assert a.chosen_prob == pytest.approx(p[0], abs=1e-6)
    assert fork_summary(fork) == "near-tie · margin 0.01/0.01 · Δlogit +0.020/-0.020"


def test_disagreement_and_threshold() -> None:
    a_logits = [3.0, 0.0, -1.0]
    b_logits = [0.0, 3.0, -1.0]
    steps = (greedy_step(a_logits), greedy_step(b_logits))
    runs = ([0], [1])
    assert find_fork(runs, steps).verdict == "disagreement"
    margin = softmax(a_logits)[0] - softmax(a_logits)[1]
    assert find_fork(runs, steps, threshold=margin + 1e-3).verdict == "near-tie"
    assert find_fork(runs, steps, threshold=margin - 1e-3).verdict == "disagreement"


def test_a_token_below_the_table_gives_a_bound() -> None:
    """A step's table holds its top rows only: a token below it has a logit at most the
    table's lowest."""
    logits = [float(-i) for i in range(200)]
    step = greedy_step(logits)
    rows = step.table.token_ids.shape[0]
    assert rows < 199
    gap = logit_gap(step, 0, 199)
    assert gap.bound == ">="
    assert gap.value == pytest.approx(0.0 - logits[rows - 1])
    assert str(gap).startswith("≥ +")
    assert logit_gap(step, 199, 0).bound == "<="


def test_identical_ended_unknown() -> None:
    step = greedy_step([1.0, 0.0])
    assert find_fork(([1, 2], [1, 2]), (None, None)).verdict == "identical"
    ended = find_fork(([1, 2], [1, 2, 3]), (None, step))
    assert (ended.index, ended.verdict) == (2, "ended")
    assert ended.runs[0].token_id is None
    assert find_fork(([1], [0]), (step, None)).verdict == "unknown"
