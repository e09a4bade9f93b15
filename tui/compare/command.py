"""Open the compare view from the app: a key binding and command palette entries.

`open_compare(app)` asks the app for what the view needs: the app's own
`compare_context()` method if it has one (returning a `CompareContext`, or a
sentence saying why a comparison cannot start now), else `app_context(app)`, which
reads the chat app's attributes (`backend`, `messages`, `live`, `ready`,
`generating`, `piece`, `max_tokens`, `_backend_lock`). The promoted column goes to
the app's `on_compare_result(result)` if it has one. Wiring in the app:

    from tui.compare.command import CompareCommands, open_compare
    COMMANDS = App.COMMANDS | {CompareCommands}
    Binding("ctrl+d", "compare", "compare", priority=True)    # in BINDINGS
    def action_compare(self) -> None:
        open_compare(self)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from textual.app import App
from textual.command import DiscoveryHit, Hit, Hits, Provider

from backend.chat.protocol import ChatBackend, ChatMessage
from sampling.errors import SamplescopeError
from sampling.settings import SamplerSettings
from tui.compare.columns import (
    DEFAULT_VARIATIONS,
    MAX_COLUMNS,
    CompareColumn,
    format_value,
    preset_columns,
    varied_columns,
)
from tui.compare.screen import DEFAULT_MAX_TOKENS, CompareResult, CompareScreen

PRESETS_SOURCE = "presets"
TOP_PRESETS = ("ArgMax", "TopK k=40 t=0.8", "TopP p=0.9 t=0.8")


@dataclass(frozen=True, slots=True)
class CompareContext:
    """What the app hands the compare view.

    Attributes:
        backend: The loaded model (no other generation may run while the view is open).
        messages: The conversation up to and including the last user turn.
        settings: The current sliders (their seed is the comparison's seed).
        on_result: Called with the promoted column, or None when the view is closed.
        pieces: A token id's text for the probability panel (e.g. `UiTokenizer.piece`).
        max_tokens: Tokens per column at most.
        lock: The app's backend lock, held by the view's worker while it generates.
    """

    backend: ChatBackend
    messages: Sequence[ChatMessage]
    settings: SamplerSettings
    on_result: Callable[[CompareResult | None], None]
    pieces: Callable[[int], str] | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    lock: threading.Lock | None = None


def last_user_turn(messages: Sequence[ChatMessage]) -> list[ChatMessage] | None:
    """The conversation up to and including its last user turn (None: no user turn)."""
    turns = list(messages)
    while turns and turns[-1].role != "user":
        turns.pop()
    return turns or None


def app_context(app: App[Any]) -> CompareContext | str:
    """The compare context of the chat app (`tui.app.SamplescopeApp`), read by name.

    Returns:
        The context, or why a comparison cannot start now.
    """
    host: Any = app
    backend = getattr(host, "backend", None)
    if backend is None or not getattr(host, "ready", True):
        return "the model is not loaded yet"
    if getattr(host, "generating", False):
        return "a reply is running: wait for it, or press Esc to stop it"
    turns = last_user_turn(getattr(host, "messages", []))
    if turns is None:
        return "nothing to compare yet: send a message first"
    live = getattr(host, "live", None)
    settings = live.current if live is not None else getattr(host, "settings", None)
    if not isinstance(settings, SamplerSettings):
        return "the app has no current sampler settings"
    on_result = getattr(host, "on_compare_result", None)
    if not callable(on_result):
        on_result = partial(_notify_result, app)
    lock = getattr(host, "_backend_lock", None)
    return CompareContext(
        backend=backend,
        messages=turns,
        settings=settings,
        on_result=on_result,
        pieces=getattr(host, "piece", None),
        max_tokens=getattr(host, "max_tokens", DEFAULT_MAX_TOKENS),
        lock=lock if hasattr(lock, "acquire") else None,
    )


def _notify_result(app: App[Any], result: CompareResult | None) -> None:
    """The fallback when the app has no `on_compare_result`: say what was chosen."""
    if result is not None:
        app.notify(
            f"column {result.column + 1} ({result.label}): {len(result.token_ids)} tokens",
            title="Compare",
        )


def load_preset_table() -> dict[str, SamplerSettings]:
    """The presets of `assets/presets.toml` (empty when the file cannot be read)."""
    try:
        from tui.resources import shipped_presets
    except ImportError:
        return {}
    try:
        return shipped_presets()
    except (SamplescopeError, OSError):
        return {}


def build_columns(
    source: str,
    base: SamplerSettings,
    presets: dict[str, SamplerSettings],
    values: Sequence[Any] | None = None,
) -> list[CompareColumn]:
    """The columns of a comparison.

    Args:
        source: "presets" (the first four presets, in file order), "presets:A|B|C"
            (those presets), or the name of a field to vary across the columns
            ("temperature", "top_k", ...).
        base: The current sliders.
        presets: The preset table.
        values: The values of the varied field (default: `DEFAULT_VARIATIONS`).

    Raises:
        SettingsError: No presets, an unknown field, or a bad value.
    """
    if source == PRESETS_SOURCE:
        names = list(presets)[:MAX_COLUMNS]
        return preset_columns(presets, names if len(names) >= 2 else ["ArgMax", "All t=0.8"])
    if source.startswith(PRESETS_SOURCE + ":"):
        return preset_columns(presets, source.split(":", 1)[1].split("|"))
    return varied_columns(
        base, source, values if values is not None else DEFAULT_VARIATIONS[source]
    )


def open_compare(
    app: App[Any],
    source: str = PRESETS_SOURCE,
    values: Sequence[Any] | None = None,
) -> CompareScreen | None:
    """Open the compare view on the app's last user turn.

    Args:
        app: The app; it must have a `compare_context()` method (see `CompareHost`).
        source: "presets" or the name of a field to vary (see `build_columns`).
        values: The values of the varied field (default: `DEFAULT_VARIATIONS`).

    Returns:
        The pushed screen, or None when the comparison could not start (the app is
        told why with a notification).
    """
    if any(isinstance(screen, CompareScreen) for screen in app.screen_stack):
        app.notify("a comparison is already open", title="Compare", severity="warning")
        return None
    host: Any = app
    context = host.compare_context() if hasattr(host, "compare_context") else app_context(app)
    if isinstance(context, str):
        app.notify(context, title="Compare", severity="warning")
        return None
    presets = load_preset_table()
    try:
        columns = build_columns(source, context.settings, presets, values)
    except SamplescopeError as exc:
        app.notify(str(exc), title="Compare", severity="error")
        return None
    screen = CompareScreen(
        context.backend,
        context.messages,
        columns,
        context.settings.seed,
        base=context.settings,
        presets=presets,
        max_tokens=context.max_tokens,
        pieces=context.pieces,
        lock=context.lock,
    )
    app.push_screen(screen, context.on_result)
    return screen


def command_entries() -> list[tuple[str, str, str]]:
    """(title, source, help) of every palette command, presets first."""
    entries = [
        (
            "Compare: seed 000 presets",
            PRESETS_SOURCE,
            "Regenerate the last reply under ArgMax, All t=0.8, All t=1.5, TopK (one seed)",
        )
    ]
    entries.append(
        (
            "Compare: ArgMax vs TopK vs TopP",
            PRESETS_SOURCE + ":" + "|".join(TOP_PRESETS),
            "Regenerate the last reply under ArgMax, TopK k=40 t=0.8, TopP p=0.9 t=0.8",
        )
    )
    for field, values in DEFAULT_VARIATIONS.items():
        shown = " / ".join(format_value(v) for v in values)
        entries.append(
            (
                f"Compare: vary {field.replace('_', '-')}",
                field,
                f"Regenerate the last reply with {field} {shown} (current sliders, one seed)",
            )
        )
    return entries


class CompareCommands(Provider):
    """Command palette entries that open the compare view."""

    async def discover(self) -> Hits:
        for title, source, help_text in command_entries():
            yield DiscoveryHit(title, partial(open_compare, self.app, source), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, source, help_text in command_entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(title),
                    partial(open_compare, self.app, source),
                    text=title,
                    help=help_text,
                )
