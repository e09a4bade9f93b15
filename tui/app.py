"""The samplescope chat app: transcript, live sampling sliders, probability bars."""

from __future__ import annotations

import contextlib
import secrets
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar, cast

from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input

from backend.chat.events import FinishedEvent, FinishReason
from backend.chat.protocol import ChatBackend, ChatMessage
from backend.config.config import Config
from backend.store.recorder import ChatRecorder
from backend.store.store import ChatRecord, ChatStore, StoreError
from sampling.errors import SamplescopeError
from sampling.settings import DEFAULT_CHAT_SETTINGS, SamplerSettings
from tui.app_config import resolve_app_config
from tui.chat.messages import BackendFailed, BackendReady, piece_lookup
from tui.chat.reply_view import Reply
from tui.chat.streaming import FLUSH_HZ, GIL_SWITCH_INTERVAL, StreamingApp
from tui.chat.transcript import Transcript
from tui.compare.command import CompareCommands, open_compare
from tui.compare.screen import CompareResult
from tui.screens.help import HelpScreen
from tui.screens.history import HistoryScreen
from tui.widgets.prob_panel import ProbPanel
from tui.widgets.sampling_panel import SamplingPanel
from tui.widgets.status_line import StatusLine

# Actions that change the conversation: not while another screen (compare,
# saved chats) is shown on top of the chat.
_CHAT_ACTIONS = frozenset(
    {
        "regenerate",
        "new_chat",
        "copy_reply",
        "token_cursor",
        "history",
        "compare",
        "new_seed",
        "toggle_colour",
        "focus_sampling",
        "focus_input",
    }
)

NEW_SEED_RANGE = 100_000
STORED_REPLIES_NOTE = "Replies of a saved chat have no per-token record; new replies will."


class SamplescopeApp(StreamingApp):
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
        store: The chat database every reply is saved to, or None (nothing saved).
        config: The config file's theme and key overrides (its model and settings are
            applied by the caller).
        notices: Messages to show at startup (e.g. a broken config file).
    """

    CSS_PATH = "app.tcss"
    TITLE = "samplescope"
    COMMANDS = StreamingApp.COMMANDS | {CompareCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        # Each binding has an id (its action's name) so that the config file's [keys]
        # table can move it (`App.set_keymap`).
        Binding("escape", "stop", "stop", id="stop"),
        Binding("ctrl+r", "regenerate", "regen", id="regenerate"),
        Binding("ctrl+n", "new_chat", "new chat", id="new_chat"),
        Binding("ctrl+o", "history", "chats", id="history"),
        Binding("ctrl+y", "copy_reply", "copy", id="copy_reply"),
        Binding("ctrl+g", "new_seed", "new seed", id="new_seed"),
        Binding("ctrl+l", "toggle_colour", "colour", id="toggle_colour"),
        Binding("ctrl+t", "token_cursor", "tokens", id="token_cursor"),
        # priority: over the input's ctrl+d
        Binding("ctrl+d", "compare", "compare", priority=True, id="compare"),
        Binding("f2", "focus_sampling", "sliders", id="focus_sampling"),
        Binding("f3", "focus_input", "input", show=False, id="focus_input"),
        Binding("f1", "help", "help", id="help"),
        # Textual's own ctrl+q has no id; this copy lets [keys] add a quit key.
        Binding("ctrl+q", "quit", "quit", show=False, priority=True, id="quit"),
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
        store: ChatStore | None = None,
        config: Config | None = None,
        notices: Sequence[str] = (),
    ) -> None:
        super().__init__(backend, settings, max_tokens, clock)
        if backend is None and backend_factory is None:
            raise ValueError("give a backend or a backend_factory")
        self._factory = backend_factory
        self.system_prompt = system_prompt
        self._cursor_blink = cursor_blink
        self._switch_interval = sys.getswitchinterval()
        self.messages = self._fresh_messages()
        self.store = store
        self._config = config if config is not None else Config()
        self._notices = tuple(notices)

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
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch_interval, GIL_SWITCH_INTERVAL))
        prompt = self.query_one("#prompt", Input)
        prompt.cursor_blink = self._cursor_blink
        prompt.focus()
        self.query_one("#transcript", Transcript).border_title = "chat"
        self.set_interval(1.0 / FLUSH_HZ, self._tick)
        for notice in self._notices:
            self.notify(notice, severity="warning", timeout=15)
        self._apply_config(self._config)
        self._load_backend()

    def _apply_config(self, config: Config) -> None:
        """Apply the config file's theme and key overrides; notify what cannot be."""
        ids = {b.id for b in self.BINDINGS if isinstance(b, Binding) and b.id}
        resolved = resolve_app_config(config, self.available_themes, ids)
        if resolved.theme:
            self.theme = resolved.theme
        if resolved.keymap:
            self.set_keymap(resolved.keymap)
        for problem in resolved.problems:
            self.notify(problem, severity="warning", timeout=15)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("New chat", "Forget the conversation", self.action_new_chat)
        yield SystemCommand(
            "Saved chats", "Open, continue or delete a past chat", self.action_history
        )
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
            if self.store is not None:
                # Hash the model file now (seconds for a big GGUF, then cached) rather
                # than before the first reply; a failure shows at the first reply.
                with contextlib.suppress(StoreError):
                    self.store.model_ref(backend.info.path)

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
        if self.store is not None:
            self.recorder = ChatRecorder(
                self.store, info.path, n_ctx=info.n_ctx, n_batch=info.n_batch
            )
        self._status.update(
            model=info.name,
            threads=info.n_threads,
            placement=info.placement,
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
        if self.recorder is not None:
            self.recorder.discard_last_reply()
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
        self._probs_note = ""
        if self.recorder is not None:
            self.recorder.new_chat()
        self._transcript.clear()
        self._probs.show(None, "", self.piece)
        self._status.update(ctx_used=0, note="new chat")

    def action_history(self) -> None:
        """Show the saved chats; the one picked becomes the conversation."""
        if self.store is None:
            self.notify("Chats are not being saved (--no-save, or the database failed).")
            return
        self.push_screen(HistoryScreen(self.store), self._history_closed)

    def _history_closed(self, chat_id: int | None) -> None:
        if chat_id is None:
            return
        if self.recorder is None:
            self.notify("The model is not loaded yet.", severity="error")
            return
        if self.generating:
            self._cancel.set()
            self._pending = lambda: self._history_closed(chat_id)
            return
        try:
            record = self.recorder.open_chat(chat_id)
        except StoreError as error:
            self.notify(str(error), severity="error", timeout=10)
            return
        self.show_chat(record)

    def show_chat(self, record: ChatRecord) -> None:
        """Make a stored chat the conversation: shown as text, continued on Enter."""
        self.messages = record.conversation()
        self.replies.clear()
        self._reset_pending = True
        transcript = self._transcript
        transcript.clear()
        for message in record.messages:
            if message.role == "user":
                transcript.add_user(message.content)
            elif message.role == "assistant":
                reason = message.reply.finish_reason if message.reply else ""
                transcript.add_stored_reply(message.content, reason)
            else:
                transcript.add_note(f"{message.role}: {message.content}")
        self._probs_note = STORED_REPLIES_NOTE if record.replies else ""
        self._probs.show(None, self._probs_note, self.piece)
        self._status.update(ctx_used=0, note=f"chat {record.id}")
        self.action_focus_input()

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

    def action_compare(self) -> None:
        """Regenerate the last user turn under several settings, side by side."""
        open_compare(self)

    def on_compare_result(self, result: CompareResult | None) -> None:
        """Make the column promoted in the compare view the chat's last reply (and save it)."""
        if result is None:
            return
        if self.messages and self.messages[-1].role == "assistant" and self.replies:
            self.messages.pop()
            self.replies.pop()
            self._transcript.remove_last_reply()
            if self.recorder is not None:
                self.recorder.discard_last_reply()
        reply = Reply(
            seed=result.settings.seed,
            settings=result.settings,
            tokens=list(result.tokens),
            finished=result.finish_reason,
        )
        self.replies.append(reply)
        self._transcript.add_reply(reply)
        question = list(self.messages)
        self.messages.append(ChatMessage("assistant", result.text))
        if self.recorder is not None:
            self.recorder.begin_reply(question, result.settings, self.max_tokens)
            for token in result.tokens:
                self.recorder.record(token)
            self.recorder.record(
                FinishedEvent(
                    cast(FinishReason, result.finish_reason),
                    result.stats,
                    result.text,
                    result.token_ids,
                )
            )
        self.flush_now()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Chat actions work only on the chat screen, not behind compare or history."""
        return not (action in _CHAT_ACTIONS and len(self.screen_stack) > 1)

    def action_help(self) -> None:
        """Show the keys."""
        self.push_screen(HelpScreen())

    # -- token cursor ----------------------------------------------------------

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

    def on_unmount(self) -> None:
        self._cancel.set()
        sys.setswitchinterval(self._switch_interval)
