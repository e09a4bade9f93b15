"""How the loop asks a strategy what to decode: one step at a time, many sequences.

Every generation decodes sequences (one KV stream each) over the model's memory; what
differs is who picks the tokens. A strategy is a generator: each time it yields a
`Plan` (which sequences end, which fork from another by `seq_cp`, and which tokens each
gets next), the loop carries it out in one `llama_decode` (or, `lockstep=False`, one
`llama_decode` a sequence: the reference a lockstep run equals) and sends back each
extended sequence's logits. Anything else the strategy yields (the sampled
generation's events) passes through to the caller; what it returns is the run's value.

The strategies: the ordinary sampled generation (`backend.session.loop.Generation`,
each live sequence continues with its sampled token), beam search
(`backend.session.beams`: the best continuations of every beam, a beam with several
kept children forked) and explore (`backend.session.tree_growth`: a tree of the kept
candidates, a node's children forked from it).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from backend.session.memory import Memory

T = TypeVar("T")
Y = TypeVar("Y")


@dataclass(frozen=True, slots=True)
class Extend:
    """Tokens to decode at the end of one sequence in the next step.

    Attributes:
        seq_id: The sequence (the model's sequence id, its KV stream).
        tokens: The tokens, in order (more than one after a rewind); the logits sent
            back are those of the last.
        fork_from: Make `seq_id` a copy of this sequence first (`seq_cp`: the cells
            are shared, not computed again); None: it continues where it stands.
    """

    seq_id: int
    tokens: tuple[int, ...]
    fork_from: int | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """One step of a strategy: sequences that end, then those that go on.

    Attributes:
        extend: Each sequence that gets tokens this step, in batch order.
        end: Sequences given back first (their cells dropped; never sequence 0).
    """

    extend: Sequence[Extend]
    end: Sequence[int] = field(default=())


Strategy = Generator[Plan | Y, list[np.ndarray], T]
"""A strategy: yields plans (answered with each extended sequence's logits) or events
to pass on, returns the run's value."""


@dataclass(slots=True)
class Decodes:
    """What the loop decoded for a strategy.

    Attributes:
        decodes: How many `llama_decode` calls.
        tokens: How many tokens they decoded.
    """

    decodes: int = 0
    tokens: int = 0


def carry_out(memory: Memory, plan: Plan, lockstep: bool, counts: Decodes) -> list[np.ndarray]:
    """Do one plan on `memory`: end, fork, decode; each extended sequence's logits.

    In lockstep every sequence's tokens go in one batch and the logits are views of
    llama.cpp's buffer (valid until the next decode); one sequence a decode copies them.
    """
    model = memory.model
    for seq_id in plan.end:
        memory.drop(seq_id)
    for extend in plan.extend:
        if extend.fork_from is not None:
            memory.fork(extend.seq_id, extend.fork_from)
    entries = plan.extend
    counts.tokens += sum(len(e.tokens) for e in entries)
    if not entries:
        return []
    if not lockstep:
        logits: list[np.ndarray] = []
        for extend in entries:
            memory.step([(extend.seq_id, token) for token in extend.tokens])
            counts.decodes += 1
            logits.append(np.array(model.logits(-1), copy=True))
        return logits
    memory.step([(e.seq_id, token) for e in entries for token in e.tokens])
    counts.decodes += 1
    if len(entries) == 1:
        return [model.logits(-1)]
    rows: list[np.ndarray] = []
    row = 0
    for extend in entries:
        row += len(extend.tokens)
        rows.append(model.logits(row - 1))
    return rows


def run(
    memory: Memory,
    strategy: Strategy[Y, T],
    *,
    lockstep: bool = True,
    counts: Decodes | None = None,
) -> Generator[Y, None, T]:
    """Run `strategy` on `memory` (see the module doc): yields what it yields besides
    plans, returns what it returns."""
    counts = counts if counts is not None else Decodes()
    try:
        item = next(strategy)
        while True:
            if isinstance(item, Plan):
                item = strategy.send(carry_out(memory, item, lockstep, counts))
            else:
                yield item
                item = next(strategy)
    except StopIteration as done:
        value: T = done.value
        return value


def run_quietly(
    memory: Memory,
    strategy: Generator[Plan, list[np.ndarray], T],
    *,
    lockstep: bool = True,
    counts: Decodes | None = None,
) -> T:
    """Run a strategy that yields nothing but plans; its value."""
    runner: Generator[Plan, None, T] = run(memory, strategy, lockstep=lockstep, counts=counts)
    while True:
        try:
            next(runner)
        except StopIteration as done:
            value: T = done.value
            return value
