"""The samplescope app: owns the live settings, the backend and the store; routes keys.

The chat itself (its widgets and its state) is `ChatView`; every generation, the
chat's and the compare view's, runs through the app's one `GenerationRunner`.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.screen import Screen
from textual.widgets import Footer

from backend.chat.completion import Mode, mode_for_backend
from backend.chat.events import FinishedEvent, GenerationEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.config.config import Config
from backend.session.backend import SessionBackend
from backend.store.recorder import ChatRecorder
from backend.store.store import ChatStore, StoreError
from sampling.errors import SettingsError
from sampling.settings import DEFAULT_CHAT_SETTINGS, SamplerSettings
from tui.app_config import resolve_app_config
from tui.chat.conversation import Conversation
from tui.chat.explore import open_explore
from tui.chat.loading import BackendFailed, BackendReady, load_backend
from tui.chat.mode_switch import switch_mode
from tui.chat.model_switch import (
    ModelSwitcher,
    ModelSwitchFailed,
    OpenModel,
    PreviousModelKept,
)
from tui.chat.reply import Reply
from tui.chat.runner import GIL_SWITCH_INTERVAL, GenerationRunner
from tui.chat.setting_input import TextEncoder, typed_value
from tui.chat.steering import regenerate, start_branch
from tui.chat.view import ChatView
from tui.chat_keys import CHAT_BINDINGS
from tui.compare.command import CompareCommands, CompareContext, last_user_turn, open_compare
from tui.compare.result import CompareResult
from tui.crash_log import CrashLoggingApp
from tui.key_sections import key_sections
from tui.loops.escape import open_loop_why
from tui.paste_driver import paste_safe_driver
from tui.preset_commands import PresetCommands
from tui.row_compositor import RowCompositor
from tui.score.screen import ScoreScreen
from tui.screens.help import HelpScreen
from tui.screens.history import HistoryScreen
from tui.screens.model_picker import ListModels
from tui.widgets.sampling_panel import SamplingPanel
from tui.widgets.status_line import StatusState
from tui.widgets.token_text import TokenPieces

# Actions that change the conversation: not while another screen (compare,
# saved chats) is shown on top of the chat.
_CHAT_ACTIONS = frozenset(
    {"regenerate", "new_chat", "copy_reply", "token_cursor", "history", "compare", "new_seed"}
    | {"toggle_colour", "focus_sampling", "focus_input", "plot", "whatif", "whatif_branch"}
    | {"toggle_mode", "explore", "pick_model", "score_text", "loop_why"}
)

NEW_SEED_RANGE = 100_000

# The app's keys, shown in the footer: the chat's, then help and quit. Each binding has
# an id (its action's name) so that the config file's [keys] table can move it
# (`App.set_keymap`).
APP_WIDE_BINDINGS: tuple[Binding, ...] = (
    Binding("f1", "help", "help", tooltip="this help: every key of every screen", id="help"),
    # Textual's own ctrl+q has no id; this copy lets [keys] add a quit key.
    Binding("ctrl+q", "quit", "quit", show=False, priority=True, tooltip="quit", id="quit"),
)
APP_BINDINGS: tuple[Binding, ...] = (*CHAT_BINDINGS, *APP_WIDE_BINDINGS)


class SamplescopeApp(CrashLoggingApp):
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
        mode: `--mode`; None: completion for a base model, else chat.
        list_models: Lists the models the picker (f7) offers (None: no picker).
        open_model: Loads a model file the picker chose (None: no picker).
        on_start: Called with the app once it is mounted (e.g. to show a screen).
    """

    CSS_PATH = "app.tcss"
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]  # noqa: RUF012 (app.tcss: plots)
    TITLE = "samplescope"
    COMMANDS = App.COMMANDS | {CompareCommands, PresetCommands}
    BINDINGS: ClassVar[list[BindingType]] = list(APP_BINDINGS)

    def __init__(
        self,
        backend: SessionBackend | None = None,
        *,
        backend_factory: Callable[[], SessionBackend] | None = None,
        settings: SamplerSettings = DEFAULT_CHAT_SETTINGS,
        max_tokens: int = 512,
        system_prompt: str | None = None,
        clock: Callable[[], float] = time.perf_counter,
        cursor_blink: bool = True,
        store: ChatStore | None = None,
        config: Config | None = None,
        notices: Sequence[str] = (),
        mode: Mode | None = None,
        list_models: ListModels | None = None,
        open_model: OpenModel | None = None,
        on_start: Callable[[SamplescopeApp], None] | None = None,
    ) -> None:
        super().__init__()
        self._on_start = on_start
        self._chat_to_open: int | None = None
        if backend is not None:
            given = backend
            backend_factory = lambda: given  # noqa: E731
        elif backend_factory is None:
            raise ValueError("give a backend or a backend_factory")
        self._load = backend_factory
        self.live = LiveSettings(settings)
        """The settings the sliders change; the generating thread reads them per token."""
        self.max_tokens = max_tokens
        self.store = store
        self.runner = GenerationRunner(self)
        """Runs every generation (chat replies, comparisons) on the one model thread."""
        self.pieces = TokenPieces()
        self.conversation = Conversation(system_prompt)
        self.chat = ChatView(
            self.runner,
            self.conversation,
            self.live,
            self.pieces,
            max_tokens=max_tokens,
            clock=clock,
            cursor_blink=cursor_blink,
            id="chat",
        )
        self._switch_interval = sys.getswitchinterval()
        self._config = config if config is not None else Config()
        self._notices = tuple(notices)
        self.requested_mode = mode
        """`--mode`; None: completion for a base model, else chat (set on load)."""
        self.encode: TextEncoder | None = None
        """The model's tokenizer on the UI thread (a logit bias typed as text)."""
        self.keymap: dict[str, str] = {}
        """The config's key overrides in force: binding id -> keys (the help shows them)."""
        self.switcher = ModelSwitcher(
            self, self.runner, self.chat, self.live, self.pieces, store, list_models, open_model
        )
        """Opens another model while the app runs (the picker)."""

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver; on Linux one that keeps a paste with escapes whole."""
        return paste_safe_driver(super().get_driver_class())

    # -- layout ----------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        """The chat's screen, drawn by a `RowCompositor` (a token redraws its rows only)."""
        screen = super().get_default_screen()
        screen._compositor = RowCompositor()
        return screen

    def compose(self) -> ComposeResult:
        yield self.chat
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch_interval, GIL_SWITCH_INTERVAL))
        self.chat.focus_input()
        for notice in self._notices:
            self.notify(notice, severity="warning", timeout=15)
        self._apply_config(self._config)
        self.chat.set_bans(self._config.bans)
        self.chat.set_loops(self._config.loops)
        if self._config.surprise is not None:
            self.chat.set_surprise(self._config.surprise)
        self._load_backend()
        if self._on_start is not None:
            self._on_start(self)

    def _apply_config(self, config: Config) -> None:
        """Apply the config file's theme and key overrides; notify what cannot be."""
        ids = {b.id for b in self.BINDINGS if isinstance(b, Binding) and b.id}
        resolved = resolve_app_config(config, self.available_themes, ids)
        if resolved.theme:
            self.theme = resolved.theme
        if resolved.keymap:
            self.set_keymap(resolved.keymap)
            self.keymap = resolved.keymap
        for problem in resolved.problems:
            self.notify(problem, severity="warning", timeout=15)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("New chat", "Forget the conversation", self.action_new_chat)
        yield SystemCommand(
            "Saved chats", "Open, continue or delete a past chat", self.action_history
        )
        yield SystemCommand(
            "Score a text", "How likely a text is, token by token", self.action_score_text
        )
        yield SystemCommand("Regenerate", "Redo the last reply, same seed", self.action_regenerate)
        yield SystemCommand("New seed", "Pick a random seed", self.action_new_seed)
        yield SystemCommand(
            "Colour tokens", "Tint tokens by probability", self.action_toggle_colour
        )
        yield SystemCommand(
            "Open a model", "Pick a GGUF on disk; the chat goes on with it", self.action_pick_model
        )
        yield SystemCommand("Keys", "Show every key", self.action_help)

    # -- loading -----------------------------------------------------------------

    @work(thread=True, exclusive=True, group="load")
    def _load_backend(self) -> None:
        load_backend(self._load, self.store, self.post_message)

    @on(BackendReady)
    def _on_backend_ready(self, message: BackendReady) -> None:
        backend = message.backend
        self.runner.backend = backend
        self.switcher.first_load = False
        if self.switching is not None:
            self.switcher.opened(message.encode, backend.info)
        self.conversation.model = backend.info.path
        self.pieces.lookup = message.pieces
        self.pieces.token_bytes = message.token_bytes
        self.encode = message.encode
        info = backend.info
        self.conversation.mode, notice = mode_for_backend(backend, self.requested_mode)
        if notice:
            self.notify(notice, timeout=15)
        if self.store is not None:
            self.conversation.recorder = ChatRecorder(
                self.store, info.path, n_ctx=info.n_ctx, n_batch=info.n_batch
            )
        self.chat.show_model(info)
        chat_id, self._chat_to_open = self._chat_to_open, None
        if chat_id is not None:
            self.open_saved_chat(chat_id)

    @on(BackendFailed)
    def _on_backend_failed(self, message: BackendFailed) -> None:
        self.switcher.first_load = False
        self.chat.show_load_error(message.error)

    def action_pick_model(self) -> None:
        """Open another model from the ones on disk (the chat goes on)."""
        self.switcher.pick()

    @on(PreviousModelKept)
    def _on_previous_kept(self, message: PreviousModelKept) -> None:
        self.switcher.kept(message.name)

    @on(ModelSwitchFailed)
    def _on_switch_failed(self, message: ModelSwitchFailed) -> None:
        self.switcher.failed(message)

    @property
    def switching(self) -> str | None:
        """The name of the model being opened by the picker (None: no switch runs)."""
        return self.runner.loading

    @property
    def ready(self) -> bool:
        """Whether the backend is loaded and ready to generate."""
        return self.runner.unavailable() is None

    def _refused(self) -> bool:
        """Whether no job can start now (a model is loading): says why."""
        why = self.runner.unavailable()
        if why is not None:
            self.notify(why)
        return why is not None

    def close_backend(self, timeout: float = 10.0) -> None:
        """Free the model once no generation uses it (call after `run` returns)."""
        self.runner.close_backend(timeout)

    # -- the chat's state (tests and benchmarks read it here) ---------------------

    @property
    def messages(self) -> list[ChatMessage]:
        """The conversation."""
        return self.conversation.messages

    @property
    def replies(self) -> list[Reply]:
        """This session's replies, with their tokens."""
        return self.conversation.replies

    @property
    def generating(self) -> bool:
        """Whether a chat reply is running."""
        return self.chat.generating

    @property
    def finished(self) -> list[FinishedEvent]:
        """Every FinishedEvent of a chat reply handled, in order."""
        return self.conversation.finished

    @property
    def event_log(self) -> list[GenerationEvent] | None:
        """Set to a list to record every event of the current reply handled."""
        return self.chat.event_log

    @event_log.setter
    def event_log(self, log: list[GenerationEvent] | None) -> None:
        self.chat.event_log = log

    @property
    def recorder(self) -> ChatRecorder | None:
        """Saves the conversation as it happens (None: nothing is saved)."""
        return self.conversation.recorder

    @property
    def status(self) -> StatusState:
        """What the status line shows."""
        return self.chat.status

    @property
    def cursor(self) -> tuple[int, int] | None:
        """The selected past token (reply, token), or None."""
        return self.chat.cursor

    def flush_now(self) -> None:
        """Draw what is pending now rather than at the next tick (tests, snapshots)."""
        self.chat.flush_now()

    # -- actions -----------------------------------------------------------------

    def action_stop(self) -> None:
        """Esc: stop the reply, else leave what-if, else leave the token cursor."""
        if not self.chat.stop() and not self.chat.whatif.leave():
            self.chat.leave_token_cursor()

    def action_regenerate(self) -> None:
        """Redo the last reply with the seed it had (a new branch of it)."""
        if self._refused() or not self.replies or self.chat.stop_then(self.action_regenerate):
            return
        self._apply("seed", self.replies[-1].seed)
        regenerate(self.chat)

    def action_new_chat(self) -> None:
        """Forget the conversation (the backend's cache is reset before the next reply)."""
        if not self.chat.stop_then(self.action_new_chat):
            self.chat.new_chat()

    def action_history(self) -> None:
        """Show the saved chats; the one picked becomes the conversation."""
        if self.store is None:
            self.notify("Chats are not being saved (--no-save, or the database failed).")
            return
        self.push_screen(HistoryScreen(self.store), self.open_saved_chat)

    def open_saved_chat(self, chat_id: int | None) -> None:
        """Make saved chat `chat_id` the conversation (None: nothing to do), as the
        saved chats screen's Enter does."""
        recorder = self.conversation.recorder
        if chat_id is None:
            return
        if recorder is None:
            if self.store is None:
                self.notify("Chats are not being saved (--no-save, or the database failed).")
                return
            self._chat_to_open = chat_id  # opened once the model is loaded
            self.notify("The chat opens once the model is loaded.")
            return
        if self.chat.stop_then(lambda: self.open_saved_chat(chat_id)):
            return
        try:
            record = recorder.open_chat(chat_id)
        except StoreError as error:
            self.notify(str(error), severity="error", timeout=10)
            return
        self.chat.show_chat(record)

    def action_copy_reply(self) -> None:
        """Copy the selected reply (token cursor), else the last one."""
        replies = self.replies
        if not replies:
            return
        number = self.cursor[0] if self.cursor is not None else len(replies) - 1
        text = replies[number].text
        self.copy_to_clipboard(text)
        self.notify(f"Copied reply {number + 1} ({len(text)} characters).")

    def action_new_seed(self) -> None:
        """Pick a random seed."""
        self._apply("seed", secrets.randbelow(NEW_SEED_RANGE))

    def action_toggle_mode(self) -> None:
        """Switch between chat and completion mode (from the next reply)."""
        self.notify(switch_mode(self.conversation), timeout=10)

    def action_toggle_colour(self) -> None:
        """Tint each token by its probability (or stop tinting)."""
        self.chat.set_colour(not self.chat.colour)

    def action_plot(self, plot: str) -> None:
        """Cycle the reply timeline's rows ("timeline") or show/hide the tail plot ("tail")."""
        self.chat.plots.toggle(plot)

    def action_token_cursor(self) -> None:
        """Enter token-cursor mode on the latest token."""
        self.chat.enter_token_cursor()

    def action_whatif(self) -> None:
        """What-if on the selected past token (again: off)."""
        self.chat.whatif.toggle(self.chat.cursor)

    def action_whatif_branch(self) -> None:
        """Branch from the what-if step with the token it shows drawn."""
        self.chat.whatif.branch()

    def action_explore(self) -> None:
        """The tree of continuations at the selected past token."""
        open_explore(self.chat, self.chat.cursor)

    def action_loop_why(self) -> None:
        """Why the selected (else the last looping) reply looped, and the ways out."""
        open_loop_why(self.chat)

    def action_focus_sampling(self) -> None:
        """Focus the first slider."""
        self.chat.focus_sampling()

    def action_focus_input(self) -> None:
        """Focus the message box."""
        self.chat.focus_input()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Chat actions work only on the chat screen, not behind compare or history."""
        if action == "whatif_branch" and not self.chat.whatif.active:
            return False
        return not (action in _CHAT_ACTIONS and len(self.screen_stack) > 1)

    def action_score_text(self) -> None:
        """Score a pasted or opened text with the model (a screen of its own)."""
        if self._refused():
            return
        if self.chat.generating:
            self.notify("wait for the reply to finish")
            return
        self.push_screen(ScoreScreen(self.runner))

    def action_help(self) -> None:
        """Show the keys."""
        self.push_screen(HelpScreen(key_sections(APP_WIDE_BINDINGS, self.keymap)))

    # -- compare -----------------------------------------------------------------

    def action_compare(self) -> None:
        """Regenerate the last user turn under several settings, side by side."""
        open_compare(self)

    def compare_context(self) -> CompareContext | str:
        """What the compare view needs from the chat, or why it cannot start now."""
        why = self.runner.unavailable()
        if why is not None:
            return why
        if self.chat.generating:
            return "a reply is running: wait for it, or press Esc to stop it"
        turns = last_user_turn(self.messages)
        if turns is None:
            return "nothing to compare yet: send a message first"
        return CompareContext(
            model=self.runner,
            messages=turns,
            settings=self.live.current,
            on_result=self.adopt_compare_result,
            pieces=self.pieces,
            max_tokens=self.max_tokens,
            mode=self.conversation.mode,
        )

    def adopt_compare_result(self, result: CompareResult | None) -> None:
        """Make the column promoted in the compare view the chat's last reply (and save it)."""
        if result is not None:
            self.chat.adopt_reply(result.settings, result.tokens, result.finished)
            if result.branch_at is not None:
                start_branch(self.chat, result.branch_at, result.force)

    # -- settings --------------------------------------------------------------

    def _apply(self, field: str, value: object) -> bool:
        """Make one setting live from the next token; False (and a notice) if refused.

        A several-valued setting may come as the text typed. Either way the sampling
        panel then shows the settings in force."""
        valid = True
        try:
            value = typed_value(field, value, self.encode)
            self.live.current = self.live.current.with_changes(**{field: value})
        except SettingsError as error:  # its message names the field and the value
            self.notify(str(error), severity="error")
            valid = False
        self.chat.show_settings(self.live.current)
        return valid

    def apply_settings(self, settings: SamplerSettings) -> None:
        """Make a whole set of settings live from the next token (an imported preset)."""
        self.live.current = settings
        self.chat.show_settings(settings)

    @on(SamplingPanel.SettingChanged)
    def _on_setting_changed(self, message: SamplingPanel.SettingChanged) -> None:
        message.stop()
        self._apply(message.field, message.value)

    # -- helpers -----------------------------------------------------------------

    def on_unmount(self) -> None:
        self.runner.cancel()
        sys.setswitchinterval(self._switch_interval)
