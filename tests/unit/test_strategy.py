"""The loop's strategy runner: a strategy's plans are ended, forked and decoded as asked,
in one batch or one sequence a decode with the same logits, and anything else it yields
passes through."""

from __future__ import annotations

from collections.abc import Generator

import numpy as np
import pytest

from backend.session.memory import Memory
from backend.session.strategy import Decodes, Extend, Plan, run, run_quietly
from tests.fake_backend import FakeModel


def _memory() -> Memory:
    memory = Memory(FakeModel())  # type: ignore[arg-type]
    memory.reserve(4, 64)
    memory.append([3, 4, 5])
    return memory


def _fork_twice() -> Generator[Plan, list[np.ndarray], list[np.ndarray]]:
    """Sequence 1 and 2 copy sequence 0; all three go on, 2 with two tokens at once."""
    first = yield Plan([Extend(0, (6,)), Extend(1, (7,), fork_from=0), Extend(2, (8, 9), 0)])
    second = yield Plan([Extend(1, (10,))], end=[0, 2])
    return [*first, *second]


@pytest.mark.parametrize("lockstep", [True, False])
def test_a_plan_forks_decodes_and_ends_as_asked(lockstep: bool) -> None:
    memory, counts = _memory(), Decodes()
    logits = run_quietly(memory, _fork_twice(), lockstep=lockstep, counts=counts)
    assert memory.tokens(1) == [3, 4, 5, 7, 10]
    assert memory.tokens(0) == [3, 4, 5, 6] and 2 not in memory._tokens
    assert (counts.decodes, counts.tokens) == ((2, 5) if lockstep else (4, 5))
    assert len(logits) == 4


def test_lockstep_gives_each_sequence_the_logits_it_gets_one_a_decode() -> None:
    batched = run_quietly(_memory(), _fork_twice(), lockstep=True)
    alone = run_quietly(_memory(), _fork_twice(), lockstep=False)
    for one, other in zip(batched, alone, strict=True):
        assert np.array_equal(one, other)
    assert not np.array_equal(batched[1], batched[2])  # the rows are each sequence's own


def test_what_a_strategy_yields_besides_plans_passes_through() -> None:
    def talking() -> Generator[Plan | str, list[np.ndarray], int]:
        yield "before"
        logits = yield Plan([Extend(0, (6,))])
        yield f"after {len(logits)}"
        return 7

    runner = run(_memory(), talking())
    said = []
    while True:
        try:
            said.append(next(runner))
        except StopIteration as done:
            value = done.value
            break
    assert said == ["before", "after 1"] and value == 7
