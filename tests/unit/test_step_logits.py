"""The in-memory logits of a reply's latest steps (what-if's fast path)."""

from __future__ import annotations

import numpy as np

from backend.session.step_logits import DEFAULT_BUDGET_BYTES, StepLogits, step_bytes

VOCAB = 49_152  # SmolLM2's vocabulary


def test_a_step_costs_its_logits_and_its_history() -> None:
    keeper = StepLogits()
    keeper.begin("reply")
    keeper.keep(0, np.zeros(VOCAB, dtype=np.float32), list(range(300)))
    kept = keeper.get("reply", 0)
    assert kept is not None
    assert step_bytes(kept) == keeper.nbytes == 4 * VOCAB + 40 + 8 * 300
    assert DEFAULT_BUDGET_BYTES // keeper.nbytes >= 300  # steps of SmolLM2 in the budget


def test_the_copy_is_taken_at_once_and_the_oldest_steps_go_first() -> None:
    step = 4 * 8 + 40 + 8 * 2
    keeper = StepLogits(budget_bytes=3 * step)
    keeper.begin("reply")
    logits, history = np.arange(8, dtype=np.float32), [1, 2]
    for index in range(5):
        keeper.keep(index, logits, history)
        logits += 1  # the caller's buffer is overwritten by the next decode
    assert len(keeper) == 3 and keeper.nbytes == 3 * step
    assert keeper.get("reply", 1) is None
    kept = keeper.get("reply", 4)
    assert kept is not None and kept.logits[0] == 4.0 and kept.history == (1, 2)
    assert keeper.get("another reply", 4) is None


def test_a_branch_keeps_its_parents_steps_before_the_fork() -> None:
    keeper = StepLogits()
    keeper.begin("parent")
    for index in range(4):
        keeper.keep(index, np.zeros(8, dtype=np.float32), [index])
    keeper.begin("branch", keep_before=2)
    assert keeper.get("branch", 1) is not None
    assert keeper.get("branch", 2) is None and keeper.get("parent", 1) is None
    assert len(keeper) == 2


def test_a_dropped_steps_buffer_is_reused_and_never_seen_outside() -> None:
    step = 4 * 8 + 40 + 8 * 1
    keeper = StepLogits(budget_bytes=2 * step + 4 * 8)
    keeper.begin("reply")
    keeper.keep(0, np.full(8, 0.0, dtype=np.float32), [0])
    seen = keeper.get("reply", 0)
    assert seen is not None
    buffers = [s.logits for s in keeper._steps.values()]  # held: no id is reused
    for index in range(1, 6):
        keeper.keep(index, np.full(8, float(index), dtype=np.float32), [index])
        buffers += [s.logits for s in keeper._steps.values()]
    assert len({id(buffer) for buffer in buffers}) == 3  # two kept, one spare, passed round
    assert seen.logits[0] == 0.0  # the step handed out earlier is a copy
    latest = keeper.get("reply", 5)
    assert latest is not None and latest.logits[0] == 5.0 and latest.history == (5,)
    earlier = keeper.get("reply", 4)
    assert earlier is not None and earlier.logits[0] == 4.0
    assert keeper.nbytes == 2 * step


def test_a_contrasted_step_keeps_the_small_models_logits_and_counts_them() -> None:
    keeper = StepLogits()
    keeper.begin("reply")
    small = np.arange(8, dtype=np.float32)
    keeper.keep(0, np.zeros(8, dtype=np.float32), [1], None, small)
    small += 1  # the caller's buffer is overwritten by the next decode
    kept = keeper.get("reply", 0)
    assert kept is not None and kept.second is None and kept.small is not None
    assert kept.small.tolist() == list(range(8))
    assert keeper.nbytes == step_bytes(kept) == 2 * 4 * 8 + 40 + 8
