"""The memory's bookkeeping follows the model's contexts: a lockstep job's context is
empty when made, and the chat's tokens come back with the chat's context (or when the
lockstep one cannot be made)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from backend.llama.context import Layout, Switch
from backend.session.memory import Memory
from backend.session.model import BatchEntry
from sampling.errors import SamplescopeError


class ContextsStub:
    """A model's memory split as `backend.llama.contexts.Contexts` splits it: the chat's
    context and at most one lockstep context (each a dict of sequences)."""

    n_ctx = 64
    n_batch = 16
    lost = False

    def __init__(self) -> None:
        self.chat: dict[int, list[int]] = {}
        self.lockstep: dict[int, list[int]] | None = None
        self.cells = self.n_ctx
        self.fail_next = False

    @property
    def active(self) -> dict[int, list[int]]:
        return self.chat if self.lockstep is None else self.lockstep

    @property
    def seq_cells(self) -> int:
        return self.cells

    def reserve(self, n_seqs: int, cells: int, layout: Layout | None = None) -> Switch:
        if n_seqs <= 1 and layout is None:
            if self.lockstep is None:
                return "kept"
            self.lockstep, self.cells = None, self.n_ctx
            return "chat"
        self.lockstep, self.cells = None, self.n_ctx
        if self.fail_next:
            raise SamplescopeError("no memory for it")
        self.lockstep, self.cells = {}, cells
        return "fresh"

    def decode(self, batch: Sequence[BatchEntry]) -> None:
        for entry in batch:
            held = self.active.setdefault(entry.seq_id, [])
            assert entry.pos == len(held)
            held.append(entry.token)

    def seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        for key in list(self.active) if seq < 0 else [seq]:
            del self.active.setdefault(key, [])[max(p0, 0) : None if p1 < 0 else p1]
        return True

    def seq_cp(self, src: int, dst: int, p0: int, p1: int) -> None:
        self.active[dst] = list(self.active.get(src, []))

    def clear(self) -> None:
        self.chat.clear()
        if self.lockstep is not None:
            self.lockstep.clear()


def test_a_lockstep_context_starts_empty_and_the_chats_tokens_come_back() -> None:
    model = ContextsStub()
    memory = Memory(model)  # type: ignore[arg-type]
    memory.append([1, 2, 3])
    memory.reserve(4, 32)
    assert memory.tokens() == [] and model.lockstep == {}
    memory.append([7, 8])
    memory.fork(1)
    memory.step([(0, 9), (1, 10)])
    assert memory.tokens(1) == [7, 8, 10] and memory.fits({0: 29, 1: 29})
    assert not memory.fits({0: 30})  # each sequence within its own stream's cells
    memory.reserve(1, 0)
    assert memory.tokens() == [1, 2, 3] and model.chat == {0: [1, 2, 3]}
    memory.append([4])
    assert model.chat[0] == [1, 2, 3, 4]


def test_a_lockstep_context_that_cannot_be_made_leaves_the_chats_books() -> None:
    model = ContextsStub()
    memory = Memory(model)  # type: ignore[arg-type]
    memory.append([1, 2, 3])
    memory.reserve(2, 16)
    memory.append([5])
    model.fail_next = True
    with pytest.raises(SamplescopeError, match="no memory"):
        memory.reserve(4, 32)
    assert memory.tokens() == [1, 2, 3]
    memory.append([4])
    assert model.chat[0] == [1, 2, 3, 4]


def test_clear_empties_both_and_goes_back_to_the_chat() -> None:
    model = ContextsStub()
    memory = Memory(model)  # type: ignore[arg-type]
    memory.append([1, 2])
    memory.reserve(3, 16)
    memory.append([5])
    memory.clear()
    assert model.lockstep is None and memory.tokens() == [] and model.chat == {}
