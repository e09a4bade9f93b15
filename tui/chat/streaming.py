"""The streaming half of the app: one generation thread, an inbox, paced redraws.

`StreamingApp` runs a generation on one thread worker that only appends events to
an inbox (and posts a message for anything but a token); handlers on the UI thread
own all state, and a timer paces the redraws. `SamplescopeApp` (tui/app.py) adds
the layout, the keys and the controls.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from textual import on, work
from textual.app import App

from backend.chat.events import (
    FinishedEvent,
    GenerationEvent,
    GenerationStats,
    NoticeEvent,
    PhaseEvent,
    PrefillProgress,
    TokenEvent,
)
from backend.chat.protocol import ChatBackend, ChatMessage, LiveSettings
from backend.store.recorder import ChatRecorder
from sampling.settings import SamplerSettings
from tui.chat.messages import GenerationUpdate
from tui.chat.reply_view import FINISH_LABELS, Reply
from tui.chat.transcript import Transcript
from tui.widgets.prob_panel import ProbPanel
from tui.widgets.status_line import StatusLine, StatusState

FLUSH_HZ = 30.0
_PHASES = ("reply", "probs", "reply", "probs", "reply", "probs", "reply", "status")
GIL_SWITCH_INTERVAL = 0.0005
"""Seconds a thread may hold the GIL while another waits (Python's default: 0.005).

The generation thread releases the GIL around every llama.cpp call and must get it
back each time; with the default 5 ms a frame being drawn on the UI thread can stall
it several times per token. 0.5 ms keeps the decode within a few percent of the bare
loop (see tui/bench_tui.py)."""


class StreamingApp(App[None]):
    """Generation, event handling and redraw pacing (see the module docstring).

    Args:
        backend: The model, or None until one is loaded (then call `_on_ready`).
        settings: The starting sampler settings.
        max_tokens: The longest reply.
        clock: Time source for the live tokens/s (inject a fake one in snapshots).
    """

    def __init__(
        self,
        backend: ChatBackend | None,
        settings: SamplerSettings,
        max_tokens: int,
        clock: Callable[[], float],
    ) -> None:
        super().__init__()
        self.backend = backend
        self.live = LiveSettings(settings)
        self.max_tokens = max_tokens
        self._clock = clock
        self.messages: list[ChatMessage] = []
        self.replies: list[Reply] = []
        self.generating = False
        self.ready = False
        """Whether the backend is loaded and ready to generate."""
        self.finished: list[FinishedEvent] = []
        """Every FinishedEvent handled, in order (for tests and benchmarks)."""
        self.event_log: list[GenerationEvent] | None = None
        """Set to a list to record every current generation event handled (tests)."""
        self._generation = 0
        self._cancel = threading.Event()
        self._backend_lock = threading.Lock()
        self._reset_pending = False
        self._pending: Callable[[], None] | None = None
        self._dirty = False
        self._ticks = 0
        self._inbox: deque[tuple[int, GenerationEvent]] = deque()
        """Events from the worker thread (deque appends and pops are thread-safe)."""
        self._first_token_at: float | None = None
        self._last_token_at: float | None = None
        self._pieces: dict[int, str] = {}
        self._piece_lookup: Callable[[int], str] | None = None
        self.recorder: ChatRecorder | None = None
        """Saves the conversation as it happens (None: nothing is saved)."""
        self._store_error_shown: str | None = None
        self._probs_note = ""
        """What the probability panel says when no reply of this session has a token."""

    def _start_reply(self) -> None:
        assert self.backend is not None
        self._transcript.clear_cursor()
        reply = Reply(seed=self.live.current.seed, settings=self.live.current)
        self.replies.append(reply)
        self._transcript.add_reply(reply)
        self._generation += 1
        self._cancel = threading.Event()
        self.generating = True
        self._first_token_at = self._last_token_at = None
        self._status.update(phase="prefill", prefill_done=0, prefill_total=0, note="")
        self._run_generation(self._generation, list(self.messages), self._cancel)

    @work(thread=True, exclusive=True, group="generate")
    def _run_generation(
        self, generation: int, messages: list[ChatMessage], cancel: threading.Event
    ) -> None:
        # The lock makes sure exactly one thread uses the backend, even if a stopped
        # generation is still winding down when the next one starts.
        with self._backend_lock:
            backend = self.backend
            assert backend is not None
            # Saved from this thread so the store never lags the model (recorder:
            # store errors never raise; a failure stops the recording, not the reply).
            recorder = self.recorder
            try:
                if self._reset_pending:
                    self._reset_pending = False
                    backend.reset()
                if recorder is not None:
                    recorder.begin_reply(messages, self.live.current, self.max_tokens)
                    self._report_store_error(generation)
                for event in backend.generate(
                    messages, self.live, max_tokens=self.max_tokens, cancel=cancel
                ):
                    if recorder is not None and not recorder.record(event):
                        self._report_store_error(generation)
                    self._post(generation, event)
            except Exception as error:  # the contract says errors come as events; be safe
                failed = FinishedEvent("error", GenerationStats(), "", (), error=str(error))
                if recorder is not None:
                    recorder.record(failed)
                self._post(generation, failed)

    def _report_store_error(self, generation: int) -> None:
        """Show the recorder's error once (worker thread; the same error only once)."""
        recorder = self.recorder
        error = recorder.error if recorder is not None else None
        if error is not None and error != self._store_error_shown:
            self._store_error_shown = error
            self._post(generation, NoticeEvent(f"This chat is not being saved: {error}"))

    def _post(self, generation: int, event: GenerationEvent) -> None:
        """Hand an event to the UI thread (called on the worker thread).

        Every event goes into the inbox, in order. Tokens wait there for the next
        redraw tick (FLUSH_HZ), which drains it: no wake-up of the UI per token.
        Anything else also posts a message so that it is handled at once.
        """
        self._inbox.append((generation, event))
        if not isinstance(event, TokenEvent):
            self.post_message(GenerationUpdate(generation))

    @on(GenerationUpdate)
    def _on_generation_update(self, message: GenerationUpdate) -> None:
        self._drain()

    def _drain(self) -> None:
        """Handle every event in the inbox (on the UI thread)."""
        while self._inbox:
            generation, event = self._inbox.popleft()
            if generation == self._generation:  # else: of a stopped generation
                self._handle(event)

    def _handle(self, event: GenerationEvent) -> None:
        if self.event_log is not None:
            self.event_log.append(event)
        if isinstance(event, TokenEvent):
            now = self._clock()
            if self._first_token_at is None:
                self._first_token_at = now
            self._last_token_at = now
            self.replies[-1].tokens.append(event)
            self._pieces[event.step.token_id] = event.piece
            self._dirty = True
        elif isinstance(event, PrefillProgress):
            self._status.update(prefill_done=event.done, prefill_total=event.total)
        elif isinstance(event, PhaseEvent):
            if event.phase == "decode":
                self._status.update(phase="decode", decode_tokens=0, decode_tps=None)
        elif isinstance(event, NoticeEvent):
            self._transcript.add_note(event.message)
        elif isinstance(event, FinishedEvent):
            self._finish(event)

    def _finish(self, event: FinishedEvent) -> None:
        self.finished.append(event)
        reply = self.replies[-1]
        reply.finished = event.reason
        reply.error = event.error or ""
        if event.text:
            self.messages.append(ChatMessage("assistant", event.text))
        self.generating = False
        self._dirty = True
        self._redraw()
        stats = event.stats
        self._status.update(
            phase="idle",
            last_ttft_ms=stats.ttft_ms,
            last_tps=stats.decode_tps,
            last_reason=FINISH_LABELS.get(event.reason, event.reason),
        )
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending()

    def _tick(self) -> None:
        """One tick of the redraw timer: bring one part of the screen up to date.

        Textual repaints the bounding box of everything marked dirty in one update,
        and the transcript, the probability panel and the status line sit in three
        corners of the screen: updated together they would repaint nearly all of
        it. So they take turns (transcript FLUSH_HZ/2 a second, bars 3/8 of
        FLUSH_HZ, status 1/8), each update staying small.
        """
        self._drain()
        if not self._dirty:
            return
        if not self.generating:
            self._redraw()
            return
        self._ticks += 1
        phase = _PHASES[self._ticks % len(_PHASES)]
        if phase == "reply":
            self._transcript.sync_last()
        elif phase == "probs":
            if self.cursor is None:
                self._show_latest()
        else:
            self._update_status()

    def _redraw(self) -> None:
        """Bring the whole screen up to date now."""
        self._dirty = False
        self._transcript.sync_last()
        if self.cursor is None:
            self._show_latest()
        self._update_status()

    def _update_status(self) -> None:
        changes: dict[str, object] = {}
        if self.ready and self.backend is not None and not self._reset_pending:
            changes["ctx_used"] = self.backend.context_used
        if self.generating and self.replies:
            count = len(self.replies[-1].tokens)
            changes["decode_tokens"] = count
            first, last = self._first_token_at, self._last_token_at
            if count > 1 and first is not None and last is not None and last > first:
                changes["decode_tps"] = (count - 1) / (last - first)
        self._status.update(**changes)

    def _show_latest(self) -> None:
        for number in range(len(self.replies) - 1, -1, -1):
            tokens = self.replies[number].tokens
            if tokens:
                title = f"token {len(tokens)} (latest)"
                self._probs.show(tokens[-1].step, title, self.piece)
                return
        self._probs.show(None, self._probs_note, self.piece)

    def piece(self, token_id: int) -> str:
        """The visible text of a token id (for the probability panel)."""
        known = self._pieces.get(token_id)
        if known is not None:
            return known
        text = f"#{token_id}"
        if self._piece_lookup is not None:
            try:
                text = self._piece_lookup(token_id)
            except Exception:  # a piece is decoration: never fail the panel over it
                text = f"#{token_id}"
        self._pieces[token_id] = text
        return text

    @property
    def status(self) -> StatusState:
        """What the status line shows."""
        return self._status.state

    def flush_now(self) -> None:
        """Draw what is pending now rather than at the next tick (tests, snapshots)."""
        self._dirty = True
        self._redraw()

    @property
    def _status(self) -> StatusLine:
        return self.query_one("#status", StatusLine)

    @property
    def _transcript(self) -> Transcript:
        return self.query_one("#transcript", Transcript)

    @property
    def _probs(self) -> ProbPanel:
        return self.query_one("#probs", ProbPanel)

    def close_backend(self, timeout: float = 10.0) -> None:
        """Free the model once no generation uses it (call after `run` returns)."""
        self._cancel.set()
        if self.backend is not None and self._backend_lock.acquire(timeout=timeout):
            try:
                self.backend.close()
            finally:
                self._backend_lock.release()

    @property
    def cursor(self) -> tuple[int, int] | None:
        """The selected past token (reply, token), or None."""
        return self._transcript.cursor
