"""A session: one model, its memory, and the one prompt preparation every generation
starts from.

Every generation (the sampled loop, `backend.session.loop`; beam search; explore) runs on
a `Session` and prepares its prompt one way (`Session.prepare`): the model recovered if
its memory was lost, the prompt fitted, the memory reserved for the generation's
sequences (its `Room`), and the prompt prefilled into sequence 0 after what the memory
already holds (`Memory.reuse`), in n_batch chunks with progress after each and a cancel
check between them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass

from backend.chat.events import GenerationEvent, NoticeEvent, PhaseEvent, PrefillProgress
from backend.llama.context import Layout
from backend.session.memory import Memory
from backend.session.model import Model
from backend.session.run import clock_now
from sampling.errors import SamplescopeError

LOST_NOTICE = "the model's memory was lost (an RPC connection failed): loading the model again"

PromptSource = Callable[[], tuple[list[int], list[str]]]
"""Gives the prompt's tokens and notices about fitting it (may raise)."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A prompt made ready in sequence 0 (`Session.prepare`).

    Attributes:
        prompt: Its tokens.
        prefilled: How many of them were computed (the rest were in the memory).
        prefill_ms: The prefill's time.
        cancelled: A cancel stopped the prefill (the memory holds part of it).
    """

    prompt: list[int]
    prefilled: int
    prefill_ms: float
    cancelled: bool = False


class Session:
    """One model and its memory: runs every generation on it (one thread only).

    Args:
        model: The model.
        clock: The time source of the figures.
    """

    def __init__(self, model: Model, clock: Callable[[], float] = clock_now) -> None:
        self.model = model
        self.memory = Memory(model)
        self.clock = clock

    def prepare(
        self,
        prompt: PromptSource,
        max_tokens: int,
        room: Room,
        cancel: threading.Event | None = None,
    ) -> Generator[GenerationEvent, None, Prepared]:
        """The one prompt preparation of every generation and strategy: the model
        recovered if its memory was lost, other sequences dropped, the prompt fitted,
        the memory reserved for `room`, and the prompt prefilled into sequence 0 after
        what the memory already holds (`Memory.reuse`), in n_batch chunks with a cancel
        check between them. Yields notices, the prefill phase and its progress.

        Raises:
            SamplescopeError: The prompt is empty or cannot be fitted; the model failed.
        """
        model, memory = self.model, self.memory
        if model.lost:
            yield NoticeEvent(LOST_NOTICE)
            memory.clear()
            model.recover()
        memory.drop_others()
        tokens, notices = prompt()
        for notice in notices:
            yield NoticeEvent(notice)
        if not tokens:
            raise SamplescopeError("the prompt is empty")
        cells = len(tokens) + max_tokens + room.extra_cells
        memory.reserve(room.streams, cells, room.layout)
        yield PhaseEvent("prefill")
        started = self.clock()
        todo = tokens[memory.reuse(tokens) :]
        cancelled = cancel is not None and cancel.is_set()
        if not cancelled:
            for done in memory.prefill(todo):
                yield PrefillProgress(done=done, total=len(todo))
                cancelled = cancel is not None and cancel.is_set() and done < len(todo)
                if cancelled:
                    break
        return Prepared(tokens, len(todo), (self.clock() - started) * 1000, cancelled)

    def prepare_quietly(
        self, prompt: PromptSource, max_tokens: int, room: Room
    ) -> tuple[Prepared, tuple[str, ...]]:
        """`prepare` run to its end: the prompt made ready, and the notices it gave."""
        notices: list[str] = []
        events = self.prepare(prompt, max_tokens, room)
        while True:
            try:
                event = next(events)
            except StopIteration as done:
                return done.value, tuple(notices)
            if isinstance(event, NoticeEvent):
                notices.append(event.message)


@dataclass(frozen=True, slots=True)
class Room:
    """What memory a generation asks for.

    Attributes:
        layout: How its sequences' memory is laid out (None: the model's own).
        streams: The sequences (KV streams) its context holds at least.
        extra_cells: Cells each sequence needs past the prompt and max_tokens.
        hold: Keep a lockstep context after the generation (else the memory goes back
            to the chat's context when it ends).
    """

    layout: Layout | None = None
    streams: int = 1
    extra_cells: int = 0
    hold: bool = False
