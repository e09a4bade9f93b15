"""The samplescope chat app: transcript, live sampling sliders, probability bars."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterable
from typing import ClassVar

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input

from backend.events import (
    FinishedEvent,
    GenerationEvent,
    GenerationStats,
    NoticeEvent,
    PhaseEvent,
    PrefillProgress,
    TokenEvent,
)
from backend.protocol import ChatBackend, ChatMessage, LiveSettings
from sampling.errors import SamplescopeError
from sampling.settings import DEFAULT_CHAT_SETTINGS, SamplerSettings
from tui.messages import BackendFailed, BackendReady, GenerationUpdate, piece_lookup
from tui.screens.help import HelpScreen
from tui.widgets.prob_panel import ProbPanel
from tui.widgets.reply_view import Reply
from tui.widgets.sampling_panel import SamplingPanel
from tui.widgets.status_line import StatusLine, StatusState
from tui.widgets.transcript import Transcript

FLUSH_HZ = 30.0
NEW_SEED_RANGE = 100_000


class SamplescopeApp(App[None]):
    """The chat app.

    Args:
        backend: A loaded backend, or None to load one with `backend_factory`.
        backend_factory: Loads the backend in a worker thread after the app starts
            (a `SamplescopeError` it raises is shown on screen).
        settings: The starting sampler settings.
        max_tokens: The longest reply.
        system_prompt: An optional system message starting every chat.
        clock: Time source for the live tokens/s (inject a fake one in snapshots).
        cursor_blink: Whether the input's cursor blinks (off in snapshots).
    """

    CSS_PATH = "app.tcss"
    TITLE = "samplescope"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "stop", "stop"),
        Binding("ctrl+r", "regenerate", "regenerate"),
        Binding("ctrl+n", "new_chat", "new chat"),
        Binding("ctrl+y", "copy_reply", "copy"),
        Binding("ctrl+g", "new_seed", "new seed"),
        Binding("ctrl+l", "toggle_colour", "colour"),
        Binding("ctrl+t", "token_cursor", "tokens"),
        Binding("f2", "focus_sampling", "sliders"),
        Binding("f3", "focus_input", "input", show=False),
        Binding("f1", "help", "help"),
    ]

    def __init__(
        self,
        backend: ChatBackend | None = None,
        *,
        backend_factory: Callable[[], ChatBackend] | None = None,
        settings: SamplerSettings = DEFAULT_CHAT_SETTINGS,
        max_tokens: int = 512,
        system_prompt: str | None = None,
        clock: Callable[[], float] = time.perf_counter,
        cursor_blink: bool = True,
    ) -> None:
        super().__init__()
        if backend is None and backend_factory is None:
            raise ValueError("give a backend or a backend_factory")
        self.backend = backend
        self._factory = backend_factory
        self.live = LiveSettings(settings)
        self.max_tokens = max_tokens
        self.system_prompt = system_prompt
        self._clock = clock
        self._cursor_blink = cursor_blink
        self.messages: list[ChatMessage] = self._fresh_messages()
        self.replies: list[Reply] = []
        self.generating = False
        self._generation = 0
        self._cancel = threading.Event()
        self._backend_lock = threading.Lock()
        self._reset_pending = False
        self._pending: Callable[[], None] | None = None
        self._dirty = False
        self._decode_started: float | None = None
        self._first_token_at: float | None = None
        self._last_token_at: float | None = None
        self._pieces: dict[int, str] = {}
        self._piece_lookup: Callable[[int], str] | None = None
        self.ready = False
        """Whether the backend is loaded and ready to generate."""
        self.finished: list[FinishedEvent] = []
        """Every FinishedEvent handled, in order (for tests and benchmarks)."""
        self.event_log: list[GenerationEvent] | None = None
        """Set to a list to record every current generation event handled (tests)."""

    # -- layout ----------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Transcript(id="transcript")
                yield Input(placeholder="Type a message; Enter sends it", id="prompt")
            with Vertical(id="right"):
                yield SamplingPanel(self.live, id="sampling")
                yield ProbPanel(id="probs")
        yield StatusLine(id="status")
        yield Footer()

    def on_mount(self) -> None:
        prompt = self.query_one("#prompt", Input)
        prompt.cursor_blink = self._cursor_blink
        prompt.focus()
        self.query_one("#transcript", Transcript).border_title = "chat"
        self.set_interval(1.0 / FLUSH_HZ, self._redraw)
        self._load_backend()

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("New chat", "Forget the conversation", self.action_new_chat)
        yield SystemCommand("Regenerate", "Redo the last reply, same seed", self.action_regenerate)
        yield SystemCommand("New seed", "Pick a random seed", self.action_new_seed)
        yield SystemCommand(
            "Colour tokens", "Tint tokens by probability", self.action_toggle_colour
        )
        yield SystemCommand("Keys", "Show every key", self.action_help)

    # -- loading -----------------------------------------------------------------

    @work(thread=True, exclusive=True, group="load")
    def _load_backend(self) -> None:
        try:
            backend = self.backend if self.backend is not None else self._load()
        except SamplescopeError as error:
            self.post_message(BackendFailed(str(error)))
        except Exception as error:  # an unexpected failure must still be shown, not crash
            self.post_message(BackendFailed(f"{type(error).__name__}: {error}"))
        else:
            self.post_message(BackendReady(backend, piece_lookup(backend)))

    def _load(self) -> ChatBackend:
        assert self._factory is not None
        return self._factory()

    @on(BackendReady)
    def _on_backend_ready(self, message: BackendReady) -> None:
        backend = message.backend
        self.backend = backend
        self._piece_lookup = message.pieces
        self.ready = True
        info = backend.info
        self._status.update(
            model=info.name,
            threads=info.n_threads,
            ctx_total=info.n_ctx,
            ctx_used=backend.context_used,
            phase="idle",
        )

    @on(BackendFailed)
    def _on_backend_failed(self, message: BackendFailed) -> None:
        self._status.update(phase="error")
        self._transcript.add_note(f"Could not load the model: {message.error}", error=True)
        self._transcript.add_note("Quit with ctrl+q, then run: samplescope --model PATH")

    # -- generation ------------------------------------------------------------

    @on(Input.Submitted, "#prompt")
    def _on_submit(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if not self.ready:
            self.notify("The model is not loaded.", severity="error")
            return
        if self.generating:
            self.notify("A reply is running: wait, or press Esc to stop it.")
            return
        event.input.clear()
        self.messages.append(ChatMessage("user", text))
        self._transcript.add_user(text)
        self._start_reply()

    def _start_reply(self) -> None:
        assert self.backend is not None
        self._transcript.clear_cursor()
        reply = Reply(seed=self.live.current.seed, settings=self.live.current)
        self.replies.append(reply)
        self._transcript.add_reply(reply)
        self._generation += 1
        self._cancel = threading.Event()
        self.generating = True
        self._decode_started = self._first_token_at = self._last_token_at = None
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
            try:
                if self._reset_pending:
                    self._reset_pending = False
                    backend.reset()
                for event in backend.generate(
                    messages, self.live, max_tokens=self.max_tokens, cancel=cancel
                ):
                    self.post_message(GenerationUpdate(generation, event))
            except Exception as error:  # the contract says errors come as events; be safe
                failed = FinishedEvent("error", GenerationStats(), "", (), error=str(error))
                self.post_message(GenerationUpdate(generation, failed))

    @on(GenerationUpdate)
    def _on_generation_update(self, message: GenerationUpdate) -> None:
        if message.generation != self._generation:
            return  # a stale event from a stopped generation
        event = message.event
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
                self._decode_started = self._clock()
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
            last_reason={"cancelled": "stopped", "max_tokens": "max tokens"}.get(
                event.reason, event.reason
            ),
        )
        self._transcript.views[-1].refresh(layout=True)
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending()

    def _redraw(self) -> None:
        """Move what the handlers collected onto the screen (at most FLUSH_HZ a second)."""
        if not self._dirty:
            return
        self._dirty = False
        self._transcript.sync_last()
        if self.cursor is None:
            self._show_latest()
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
        self._probs.show(None, "", self.piece)

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

    # -- actions -----------------------------------------------------------------

    def action_stop(self) -> None:
        """Esc: stop the reply, else leave the token cursor."""
        if self.generating:
            self._cancel.set()
        elif self.cursor is not None or self.focused is self._transcript:
            self._transcript.clear_cursor()
            self.action_focus_input()

    def action_regenerate(self) -> None:
        """Redo the last reply with the seed it had."""
        if not self.ready or not self.replies:
            return
        if self.generating:
            self._cancel.set()
            self._pending = self.action_regenerate
            return
        reply = self.replies.pop()
        self._transcript.remove_last_reply()
        if self.messages and self.messages[-1].role == "assistant":
            self.messages.pop()
        self._apply("seed", reply.seed)
        self._start_reply()

    def action_new_chat(self) -> None:
        """Forget the conversation (the backend's cache is reset before the next reply)."""
        if self.generating:
            self._cancel.set()
            self._pending = self.action_new_chat
            return
        self.messages = self._fresh_messages()
        self.replies.clear()
        self._reset_pending = True
        self._transcript.clear()
        self._probs.show(None, "", self.piece)
        self._status.update(ctx_used=0, note="new chat")

    def action_copy_reply(self) -> None:
        """Copy the selected reply (token cursor), else the last one."""
        if not self.replies:
            return
        number = self.cursor[0] if self.cursor is not None else len(self.replies) - 1
        text = self.replies[number].text
        self.copy_to_clipboard(text)
        self.notify(f"Copied reply {number + 1} ({len(text)} characters).")

    def action_new_seed(self) -> None:
        """Pick a random seed."""
        self._apply("seed", secrets.randbelow(NEW_SEED_RANGE))

    def action_toggle_colour(self) -> None:
        """Tint each token by its probability (or stop tinting)."""
        self._transcript.set_colour(not self._transcript.colour)

    def action_token_cursor(self) -> None:
        """Enter token-cursor mode on the latest token."""
        self._transcript.focus()
        if self.cursor is None:
            self._transcript.action_move_token(1_000_000)

    def action_focus_sampling(self) -> None:
        """Focus the first slider."""
        self.query_one(SamplingPanel).focus_first()

    def action_focus_input(self) -> None:
        """Focus the message box."""
        self.query_one("#prompt", Input).focus()

    def action_help(self) -> None:
        """Show the keys."""
        self.push_screen(HelpScreen())

    # -- token cursor ----------------------------------------------------------

    @property
    def cursor(self) -> tuple[int, int] | None:
        """The selected past token (reply, token), or None."""
        return self._transcript.cursor

    @property
    def colour(self) -> bool:
        """Whether tokens are tinted by probability."""
        return self._transcript.colour

    @on(Transcript.TokenSelected)
    def _on_token_selected(self, message: Transcript.TokenSelected) -> None:
        if message.cursor is None:
            self._dirty = True  # back to the latest token at the next redraw
            return
        number, index = message.cursor
        reply = self.replies[number]
        title = f"reply {number + 1} token {index + 1}/{len(reply.tokens)}"
        self._probs.show(reply.tokens[index].step, title, self.piece)

    # -- settings --------------------------------------------------------------

    def _apply(self, field: str, value: object) -> bool:
        """Make one setting live from the next token; False (and a notice) if invalid."""
        return self.query_one(SamplingPanel).apply(field, value)

    # -- helpers -----------------------------------------------------------------

    def _fresh_messages(self) -> list[ChatMessage]:
        return [ChatMessage("system", self.system_prompt)] if self.system_prompt else []

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

    def on_unmount(self) -> None:
        self._cancel.set()

    def close_backend(self, timeout: float = 10.0) -> None:
        """Free the model once no generation uses it (call after `run` returns)."""
        self._cancel.set()
        if self.backend is not None and self._backend_lock.acquire(timeout=timeout):
            try:
                self.backend.close()
            finally:
                self._backend_lock.release()
