"""The samplescope app: owns the live settings, the backend and the store; routes keys.

The chat itself is `ChatScreen` (its keys and their actions) holding `ChatView` (its
widgets and state); every generation, the chat's and the compare view's, runs through
the app's one `GenerationRunner`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, cast

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.notifications import SeverityLevel
from textual.screen import Screen

from backend.chat.completion import Mode, mode_for_backend
from backend.chat.protocol import LiveSettings
from backend.chat.template_switches import NO_SWITCHES, TemplateSwitches, thinking_tags_of
from backend.config.config import Config
from backend.config.presets import PresetError
from backend.config.setting_input import TextEncoder, typed_value
from backend.config.setting_sources import NO_SOURCES, SettingSources
from backend.llama.model_sampling import ModelSampling
from backend.session.backend import SessionBackend
from backend.session.sweep_result import SweepResult
from backend.store.recorder import ChatRecorder
from backend.store.store import ChatStore, StoreError
from sampling.built_in import BUILT_IN_REGISTRY, chat_defaults
from sampling.errors import SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry, registry_of
from tui.app_config import resolve_app_config
from tui.chat.conversation import Conversation
from tui.chat.keys import CHAT_BINDINGS
from tui.chat.panels import PANELS
from tui.chat.screen import ChatScreen
from tui.chat.selection import ChatPanel
from tui.chat.steering import start_branch
from tui.chat.view import ChatView
from tui.compare.command import CompareCommands, CompareContext, last_user_turn
from tui.compare.result import CompareResult
from tui.crash_log import CrashLoggingApp
from tui.help.screen import HelpScreen
from tui.help.sections import key_sections
from tui.models.contrast import (
    ContrastDropped,
    ContrastFailed,
    ContrastLoaded,
    ContrastModels,
    OpenContrast,
)
from tui.models.loading import BackendFailed, BackendReady, load_backend
from tui.models.picker import ListModels
from tui.models.switch import (
    ModelSwitcher,
    ModelSwitchFailed,
    OpenModel,
    PreviousModelKept,
)
from tui.panel.sampling_panel import SamplingPanel
from tui.panel.settings_actions import SettingsActions
from tui.paste_driver import paste_safe_driver
from tui.preset_commands import PresetCommands, PresetHost, apply_preset, ask_preset_name
from tui.resources import available_presets
from tui.runner import GIL_SWITCH_INTERVAL, GenerationRunner
from tui.setting_origins import SettingOrigins
from tui.sweep.command import open_sweep
from tui.template_commands import (
    TemplateHost,
    show_prompt,
    toggle_thinking,
    use_switches,
)
from tui.widgets.preset_picker import PresetPickerScreen
from tui.widgets.token_text import TokenPieces

# The app-wide keys: help and quit (the chat's are on its screen, `ChatScreen`). Each
# binding has an id (its action's name) so that the config file's [keys] table can move
# it (`App.set_keymap`).
APP_WIDE_BINDINGS: tuple[Binding, ...] = (
    Binding("f1", "help", "help", tooltip="this help: every key of every screen", id="help"),
    # Textual's own ctrl+q has no id; this copy lets [keys] add a quit key.
    Binding("ctrl+q", "quit", "quit", show=False, priority=True, tooltip="quit", id="quit"),
)


class SamplescopeApp(CrashLoggingApp):
    """The chat app.

    Args:
        backend: A loaded backend, or None to load one with `backend_factory`.
        backend_factory: Loads the backend in a worker thread after the app starts
            (a `SamplescopeError` it raises is shown on screen).
        settings: The starting sampler settings (default: the chat's, made with
            `registry`).
        setting_sources: Where each of them came from (the config, a flag); the
            model's own settings fill the others when it loads.
        template_switches: What the chat template is given besides the messages
            (`--chat-template-kwargs`, `--reasoning-effort`, `--reasoning-preserve`).
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
        open_contrast: Loads a contrast model (the palette's "Load a contrast model";
            None: the app offers none).
        contrast_model: The contrast model to load beside the model (`--contrast-model`).
        on_start: Called with the app once it is mounted (e.g. to show a screen).
        panels: The chat's per-token panels (`tui.chat.panels.PANELS`).
        registry: The sampler units and plugins the app runs with (default: the
            one `settings` was made with, else the built-in units').
    """

    # The chat's rules beside it; the app loads them (Textual reads a screen's CSS_PATH
    # when the screen is pushed, not for the default screen).
    CSS_PATH = ["app.tcss", "chat/chat.tcss"]  # noqa: RUF012 (Textual's class variable)
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]  # noqa: RUF012 (-short: no tail plot)
    TITLE = "samplescope"
    COMMANDS = App.COMMANDS | {CompareCommands, PresetCommands}
    BINDINGS: ClassVar[list[BindingType]] = list(APP_WIDE_BINDINGS)

    def __init__(
        self,
        backend: SessionBackend | None = None,
        *,
        backend_factory: Callable[[], SessionBackend] | None = None,
        settings: SamplerSettings | None = None,
        setting_sources: SettingSources = NO_SOURCES,
        template_switches: TemplateSwitches = NO_SWITCHES,
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
        open_contrast: OpenContrast | None = None,
        contrast_model: Path | None = None,
        on_start: Callable[[SamplescopeApp], None] | None = None,
        panels: Sequence[type[ChatPanel]] = PANELS,
        registry: Registry | None = None,
    ) -> None:
        super().__init__()
        if registry is None:
            registry = BUILT_IN_REGISTRY if settings is None else registry_of(settings)
        self.registry = registry
        """The sampler units the app runs with, and every table derived from them (the
        front door's: the built-in units and the plugins it loaded)."""
        self._on_start = on_start
        self._chat_to_open: int | None = None
        if backend is not None:
            given = backend
            backend_factory = lambda: given  # noqa: E731
        elif backend_factory is None:
            raise ValueError("give a backend or a backend_factory")
        self._load = backend_factory
        self.live = LiveSettings(chat_defaults(registry) if settings is None else settings)
        """The settings the sliders change; the generating thread reads them per token."""
        self.back_to_sweep: Callable[[], None] | None = None
        """Shows the sweep a sample was opened from again (None: none was)."""
        self.start_settings = self.live.current
        """The settings the app started with (defaults, config, flags, the model's
        own): "reset" restores them; a new chat keeps the sliders as they are."""
        self.origins = SettingOrigins(self.live.current, setting_sources)
        """Where each live setting came from."""
        self.template_switches = template_switches
        """What the chat template is given besides the messages (the palette's
        "Thinking on/off" changes it)."""
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
            panels=panels,
            id="chat",
        )
        self._chat_screen: ChatScreen | None = None
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
        self.contrast_models = ContrastModels(
            self, self.runner, self.chat, store, list_models, open_contrast, contrast_model
        )
        """Loads and drops the contrast model beside the model (the palette)."""

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver; on Linux one that keeps a paste with escapes whole."""
        return paste_safe_driver(super().get_driver_class())

    # -- layout ----------------------------------------------------------------

    @property
    def chat_screen(self) -> ChatScreen:
        """The chat's screen: the view, its footer and the chat's keys (made once the
        app runs: a screen takes the running app's context)."""
        if self._chat_screen is None:
            self._chat_screen = ChatScreen(self.chat, self)
        return self._chat_screen

    def get_default_screen(self) -> Screen[Any]:
        """The chat's screen, the first on the stack."""
        return self.chat_screen

    def on_mount(self) -> None:
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch_interval, GIL_SWITCH_INTERVAL))
        for notice in self._notices:
            self.notify(notice, severity="warning", timeout=15)
        self._apply_config(self._config)

    def chat_mounted(self) -> None:
        """The chat's widgets are up (its screen calls this): the config's chat
        settings, then the model's load."""
        self.chat.focus_input()
        self.chat.set_bans(self._config.bans)
        self.chat.set_loops(self._config.loops)
        if self._config.surprise is not None:
            self.chat.set_surprise(self._config.surprise)
        self._load_backend()
        if self._on_start is not None:
            self._on_start(self)

    def _apply_config(self, config: Config) -> None:
        """Apply the config file's theme and key overrides; notify what cannot be."""
        ids = {b.id for b in (*APP_WIDE_BINDINGS, *CHAT_BINDINGS) if b.id}
        resolved = resolve_app_config(config, self.available_themes, ids)
        if resolved.theme:
            self.theme = resolved.theme
        if resolved.keymap:
            self.set_keymap(resolved.keymap)
            self.keymap = resolved.keymap
        for problem in resolved.problems:
            self.notify(problem, severity="warning", timeout=15)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        # Textual's own "Keys" shows the focused widget's keys; the app's shows them all.
        yield from (c for c in super().get_system_commands(screen) if c.title != "Keys")
        chat = self.chat_screen
        yield SystemCommand("New chat", "Forget the conversation", chat.action_new_chat)
        yield SystemCommand(
            "Saved chats", "Open, continue or delete a past chat", chat.action_history
        )
        yield SystemCommand(
            "Score a text", "How likely a text is, token by token", chat.action_score_text
        )
        yield SystemCommand("Regenerate", "Redo the last reply, same seed", chat.action_regenerate)
        yield SystemCommand("New seed", "Pick a random seed", chat.action_new_seed)
        yield SystemCommand(
            "Colour tokens", "Tint tokens by probability", chat.action_toggle_colour
        )
        yield SystemCommand(
            "Open a model", "Pick a GGUF on disk; the chat goes on with it", chat.action_pick_model
        )
        if self.contrast_models.open_contrast is not None:
            yield SystemCommand(
                "Load a contrast model",
                "A smaller model of the same vocabulary decoded beside every reply (contrast β)",
                self.contrast_models.pick,
            )
        if self.contrast_models.loaded:
            yield SystemCommand(
                "Drop the contrast model",
                "Free it: replies decode with the model alone",
                self.contrast_models.drop,
            )
        thinking = "on" if self.template_switches.enable_thinking is False else "off"
        yield SystemCommand(
            f"Thinking {thinking}",
            f"Give the chat template enable_thinking={'true' if thinking == 'on' else 'false'}"
            " from the next prompt",
            lambda: toggle_thinking(cast(TemplateHost, self)),
        )
        yield SystemCommand(
            "Show the prompt",
            "The prompt of the reply under the cursor, else the next or the last one",
            self.show_turn_prompt,
        )
        yield SystemCommand("Keys", "Show every key", self.action_help)
        if self.back_to_sweep is not None:
            yield SystemCommand(
                "Sweep: back to the frontier",
                "Show the sweep this sample was opened from again",
                self.back_to_sweep,
            )

    # -- loading -----------------------------------------------------------------

    @work(thread=True, exclusive=True, group="load")
    def _load_backend(self) -> None:
        load_backend(self._load, self.store, self.post_message, registry=self.registry)

    @on(BackendReady)
    def _on_backend_ready(self, message: BackendReady) -> None:
        backend = message.backend
        self.runner.backend = backend
        backend.template.switches = self.template_switches
        self.switcher.first_load = False
        if self.runner.loading is not None:  # the picker's model
            self.switcher.opened(message.encode, backend.info)
        self.conversation.model = backend.info.path
        self.pieces.lookup = message.pieces
        self.pieces.token_bytes = message.token_bytes
        self.encode = message.encode
        self._take_model_settings(message.own_settings)
        info = backend.info
        self.conversation.mode, notice = mode_for_backend(backend, self.requested_mode)
        if notice:
            self.notify(notice, timeout=15)
        if self.store is not None:
            self.conversation.recorder = ChatRecorder.of_model(
                self.store, info, lambda: backend.template.switches.to_json()
            )
        self.chat.show_model(info)
        chat_id, self._chat_to_open = self._chat_to_open, None
        if chat_id is not None:
            self.open_saved_chat(chat_id)
        self.contrast_models.model_loaded()

    def _take_model_settings(self, own: ModelSampling) -> None:
        """The loaded model's own settings fill those the user did not set."""
        live, self.start_settings = self.origins.model_loaded(self.live.current, own)
        self.live.current = live
        self._show_settings(live)
        for problem in own.problems:
            self.notify(problem, severity="warning", timeout=15)
        filled = self.origins.sources.from_model()
        if filled:
            specs = live.registry.settings_by_name
            shown = ", ".join(f"{name} {specs[name].format(live.value(name))}" for name in filled)
            self.notify(f"The model's own settings (general.sampling): {shown}.", timeout=10)

    @property
    def loaded_backend(self) -> SessionBackend | None:
        """The model, once loaded."""
        return self.runner.backend

    def show_turn_prompt(self) -> None:
        """Show the prompt of the reply under the token cursor, else the next or last."""
        cursor = self.chat.cursor
        conversation = self.conversation
        show_prompt(
            cast(TemplateHost, self),
            conversation.mode,
            conversation.messages,
            [reply.turn for reply in conversation.replies],
            None if cursor is None else cursor[0],
        )

    @on(BackendFailed)
    def _on_backend_failed(self, message: BackendFailed) -> None:
        self.switcher.first_load = False
        self.chat.show_load_error(message.error)

    @on(PreviousModelKept)
    def _on_previous_kept(self, message: PreviousModelKept) -> None:
        self.switcher.kept(message.name)

    @on(ModelSwitchFailed)
    def _on_switch_failed(self, message: ModelSwitchFailed) -> None:
        self.switcher.failed(message)

    @on(ContrastLoaded)
    def _on_contrast_loaded(self, message: ContrastLoaded) -> None:
        self.contrast_models.loaded_beside(message)

    @on(ContrastFailed)
    def _on_contrast_failed(self, message: ContrastFailed) -> None:
        self.contrast_models.failed(message)

    @on(ContrastDropped)
    def _on_contrast_dropped(self, message: ContrastDropped) -> None:
        self.contrast_models.dropped(message)

    def close_backend(self, timeout: float = 10.0) -> None:
        """Free the model once no generation uses it (call after `run` returns)."""
        self.runner.close_backend(timeout)

    # -- actions -----------------------------------------------------------------

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

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A notice, its text never read as markup (whatever `markup` a widget passes):
        notices quote model text, prompts, titles and typed values, where "[/]" would
        stop the app when the notice is drawn."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def open_sweep(self, result: SweepResult) -> None:
        """Show a kept sweep's frontier over the chat, as `sweep --view` does."""
        open_sweep(self, result)

    def action_help(self) -> None:
        """Show the keys."""
        self.push_screen(HelpScreen(key_sections(APP_WIDE_BINDINGS, self.keymap)))

    # -- compare -----------------------------------------------------------------

    def compare_context(self) -> CompareContext | str:
        """What the compare view needs from the chat, or why it cannot start now."""
        why = self.runner.unavailable()
        if why is not None:
            return why
        if self.chat.generating:
            return "a reply is running: wait for it, or press Esc to stop it"
        turns = last_user_turn(self.conversation.messages)
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

    def apply_setting(self, field: str, value: object) -> bool:
        """Make one setting live from the next token; False (and a notice) if refused.

        A several-valued setting may come as the text typed. Either way the sampling
        panel then shows the settings in force."""
        valid = True
        try:
            value = typed_value(field, value, self.encode, registry_of(self.live.current))
            self.live.current = self.live.current.with_changes(**{field: value})
            self.origins.moved(field)
            if field == "thinking_tags":  # what earlier replies' thinking is cut at
                tags = thinking_tags_of(self.live.current)
                use_switches(
                    cast(TemplateHost, self), replace(self.template_switches, thinking_tags=tags)
                )
        except SettingsError as error:  # its message names the field and the value
            self.notify(str(error), severity="error")
            valid = False
        self._show_settings(self.live.current)
        return valid

    def apply_settings(self, settings: SamplerSettings) -> None:
        """Make a whole set of settings live from the next token (an imported preset)."""
        self.live.current = settings
        self.origins.whole_set(settings)
        self._show_settings(settings)

    def _show_settings(self, settings: SamplerSettings) -> None:
        """The panel shows `settings`, and which of them the model's own fill."""
        self.chat.show_settings(settings)
        for panel in self.chat.query(SamplingPanel):
            panel.border_subtitle = self.origins.subtitle(settings)

    def reset_settings(self) -> None:
        """Put the settings the app started with back on the sliders (from the next token)."""
        self.live.current = self.start_settings
        self.origins.reset()
        self._show_settings(self.start_settings)
        self.notify("The settings are back to those samplescope started with.", timeout=8)

    @on(SettingsActions.Chosen)
    def _on_settings_action(self, message: SettingsActions.Chosen) -> None:
        message.stop()
        if message.action == "reset":
            self.reset_settings()
        elif message.action == "save-preset":
            ask_preset_name(cast(PresetHost, self))
        else:
            self.pick_preset()

    def pick_preset(self) -> None:
        """List the presets; the one picked goes on the sliders."""
        try:
            presets = available_presets(self.registry)
        except (PresetError, OSError) as error:
            self.notify(str(error), severity="error", timeout=15)
            return

        def picked(name: str | None) -> None:
            if name is not None:
                apply_preset(cast(PresetHost, self), name, presets[name])

        self.push_screen(PresetPickerScreen(presets, "Put a preset on the sliders"), picked)

    @on(SamplingPanel.SettingChanged)
    def _on_setting_changed(self, message: SamplingPanel.SettingChanged) -> None:
        message.stop()
        self.apply_setting(message.field, message.value)

    # -- helpers -----------------------------------------------------------------

    def on_unmount(self) -> None:
        self.runner.cancel()
        sys.setswitchinterval(self._switch_interval)
