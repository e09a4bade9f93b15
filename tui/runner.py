"""The generation pipeline of the TUI: one thread worker, one inbox, paced hand-over.

`GenerationRunner` runs a job (a generation: a chat reply, the columns of a
comparison) on a thread worker that holds the backend lock, so exactly one thread
uses the model at a time. The worker only appends events to an inbox; for anything
but a token it also posts a wake-up to the UI thread. On the UI thread the inbox is
drained at FLUSH_HZ while a job runs (and at each wake-up), events of a stopped
generation are dropped, and the rest go to the job's consumer (`GenerationConsumer`),
which owns every state change and every widget; after each timed drain the consumer
paints. An idle runner's timer is paused.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from textual.dom import DOMNode
from textual.timer import Timer

from backend.chat.compare import ColumnEvent
from backend.chat.events import GenerationEvent, LoopEvent, TokenEvent
from backend.error_log import logged_line
from backend.session.backend import SessionBackend
from sampling.errors import SamplescopeError

FLUSH_HZ = 10.0
"""How often the inbox is drained and the consumer paints while a job runs."""

GIL_SWITCH_INTERVAL = 0.0005
"""Seconds a thread may hold the GIL while another waits (Python's default: 0.005).

The generation thread releases the GIL around every llama.cpp call and must get it
back each time; with the default 5 ms a frame being drawn on the UI thread can stall
it several times per token. 0.5 ms keeps the decode within a few percent of the bare
loop (see tui/bench.py); the app sets it while it runs."""


def freeze_heap() -> None:
    """A job starts: leave every object that exists now out of garbage collection.

    Python's full collection walks every tracked object; with Textual's widgets and a
    chat's records that is ~60 ms, which lands on the UI thread or the generation
    thread mid-reply (a stall of ~5 tokens). Frozen, a collection walks only what the
    job made. `thaw_heap` gives the objects back when the job ends, so garbage that
    was frozen is still collected then.
    """
    gc.freeze()


def thaw_heap() -> None:
    """The job ended: frozen objects are collected again (see `freeze_heap`)."""
    gc.unfreeze()


Job = Callable[[SessionBackend, threading.Event], Iterable[ColumnEvent]]
"""What the worker runs: given the backend and the cancel flag, the events to show
(each tagged with its column; a chat reply is column 0). Runs on the worker thread."""


class GenerationConsumer(Protocol):
    """A view showing a job's events; the runner calls it on the UI thread only."""

    def generation_event(self, column: int, event: GenerationEvent) -> None:
        """One event of the current job, in order."""
        ...

    def generation_ended(self, error: str | None) -> None:
        """The job returned (`error`: the message of what it raised)."""
        ...

    def paint(self) -> None:
        """Bring the screen up to date (after each timed drain: FLUSH_HZ a second while
        a job runs)."""
        ...


@dataclass(frozen=True, slots=True)
class _JobEnded:
    error: str | None
    unexpected: bool = False
    """Whether the error is a bug's (logged, and shown as a notice too)."""


class GenerationRunner:
    """Runs generations on one thread worker and hands their events to a consumer.

    Args:
        host: The node that runs the worker and the drain timer (the app, or a
            screen with a model of its own).
        backend: The model, or None until one is loaded (then set `backend`).
    """

    def __init__(self, host: DOMNode, backend: SessionBackend | None = None) -> None:
        self.host = host
        self.backend = backend
        self.running = False
        """Whether the current job's end has not been handled yet."""
        self.loading: str | None = None
        """The name of a model being opened in place of `backend` (None: none is)."""
        self._consumer: GenerationConsumer | None = None
        self._generation = 0
        self._cancel = threading.Event()
        self._backend_lock = threading.Lock()
        self._workers = 0  # worker threads not yet returned (guarded by _count_lock)
        self._count_lock = threading.Lock()
        self._inbox: deque[tuple[int, int, GenerationEvent | _JobEnded]] = deque()
        """(generation, column, event) from the worker (deque appends/pops are atomic)."""
        self._timer: Timer | None = None
        self._broken: tuple[int, str] | None = None
        """(generation, one line): the job whose consumer raised, and what it raised."""

    @property
    def idle(self) -> bool:
        """Whether no worker thread is using (or waiting for) the backend."""
        return self._workers == 0

    def unavailable(self) -> str | None:
        """Why no job can start now, as a notice (None: one can).

        Every starter asks before it changes anything: while a model is opened no
        model is there to run a job."""
        if self.loading is not None:
            return f"A model is loading ({self.loading}): wait for it."
        if self.backend is None:
            return "The model is not loaded yet."
        return None

    def start(self, job: Job, consumer: GenerationConsumer) -> None:
        """Run `job` on the worker; its events go to `consumer` from now on.

        A job still running (stopped with `cancel`) finishes first: the backend lock
        makes the new one wait, and its remaining events are dropped.
        """
        backend = self.backend
        if backend is None:
            raise RuntimeError("no model is loaded")
        if self._timer is None:
            self._timer = self.host.set_interval(1.0 / FLUSH_HZ, self._tick)
        else:
            self._timer.resume()
        self._generation += 1
        self._cancel = threading.Event()
        self._consumer = consumer
        self.running = True
        freeze_heap()
        with self._count_lock:
            self._workers += 1
        work = partial(self._work, self._generation, job, backend, self._cancel)
        self.host.run_worker(
            work, name="generation", group="generate", thread=True, exit_on_error=False
        )

    def cancel(self) -> None:
        """Ask the current job to stop (within one token or one prefill chunk)."""
        self._cancel.set()

    def release(self, consumer: GenerationConsumer) -> None:
        """`consumer` goes away: stop its job and hand it nothing more."""
        if self._consumer is consumer:
            self._cancel.set()
            self._consumer = None
            self._generation += 1  # what is still queued or in flight is dropped
            self.running = False

    async def wait_idle(self) -> None:
        """Wait (without blocking the UI) until no worker uses the backend."""
        while not self.idle:
            await asyncio.sleep(0.01)

    def close_backend(self, timeout: float = 10.0) -> None:
        """Free the model once no generation uses it (call after the app returned)."""
        self._cancel.set()
        thaw_heap()  # a job stopped with the app hands no end to drain
        backend = self.backend
        if backend is not None and self._backend_lock.acquire(timeout=timeout):
            try:
                backend.close()
            finally:
                self._backend_lock.release()

    def close_after_use(self, backend: SessionBackend, timeout: float = 10.0) -> bool:
        """Free a model that no longer is `backend` once the generation that may still
        use it has stopped (any thread); False when it did not stop within `timeout`."""
        if not self._backend_lock.acquire(timeout=timeout):
            return False
        try:
            backend.close()
        finally:
            self._backend_lock.release()
        return True

    # -- worker thread -------------------------------------------------------------

    def _work(
        self, generation: int, job: Job, backend: SessionBackend, cancel: threading.Event
    ) -> None:
        error: str | None = None
        unexpected = False
        try:
            with self._backend_lock:
                for item in job(backend, cancel):
                    self._put(generation, item.column, item.event)
        except SamplescopeError as exc:
            error = str(exc)
        except Exception as exc:  # a bug: log and show it rather than kill the app
            error, unexpected = logged_line(exc), True
        finally:
            with self._count_lock:
                self._workers -= 1
        self._put(generation, -1, _JobEnded(error, unexpected))

    def _put(self, generation: int, column: int, event: GenerationEvent | _JobEnded) -> None:
        """Hand an event to the UI thread (worker thread).

        Tokens (and a loop's growth, which can come with every token) wait in the
        inbox for the next timed drain: no wake-up of the UI per token. Anything else
        also posts a wake-up so that it is handled at once.
        """
        self._inbox.append((generation, column, event))
        if not isinstance(event, TokenEvent | LoopEvent):
            self.host.call_later(self.drain)  # posts a message: safe from any thread

    # -- UI thread -----------------------------------------------------------------

    def drain(self) -> None:
        """Hand every queued event of the current job to its consumer."""
        inbox = self._inbox
        while inbox:
            generation, column, event = inbox.popleft()
            if isinstance(event, _JobEnded) and self.idle:
                thaw_heap()  # the last worker returned (a stopped job's too)
            consumer = self._consumer
            if generation != self._generation or consumer is None:
                continue  # of a stopped job
            try:
                self._hand(consumer, generation, column, event)
            except Exception as error:  # a bug in the view: logged, told, the chat goes on
                self._report(generation, logged_line(error))

    def _hand(
        self,
        consumer: GenerationConsumer,
        generation: int,
        column: int,
        event: GenerationEvent | _JobEnded,
    ) -> None:
        """Hand one event to `consumer`; after it raised, only the job's end (with what
        it raised as the job's error)."""
        broken = self._broken if self._broken and self._broken[0] == generation else None
        if isinstance(event, _JobEnded):
            self.running = False
            if event.unexpected:
                self.host.app.notify(event.error or "", severity="error", timeout=30)
            consumer.generation_ended(broken[1] if broken else event.error)
        elif broken is None:
            consumer.generation_event(column, event)

    def _report(self, generation: int, line: str) -> None:
        """The consumer raised: stop its job, drop its events, and tell in one line."""
        self._broken = (generation, line)
        self._cancel.set()
        self.host.app.notify(f"{line}; the chat goes on", severity="error", timeout=30)

    def _tick(self) -> None:
        self.drain()
        broken = self._broken is not None and self._broken[0] == self._generation
        if self._consumer is not None and not broken:
            try:
                self._consumer.paint()
            except Exception as error:  # as in `drain`
                self._report(self._generation, logged_line(error))
        if self.idle and not self._inbox and self._timer is not None:
            self._timer.pause()  # an idle app does not wake up FLUSH_HZ times a second
