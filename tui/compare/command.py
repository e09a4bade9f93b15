"""Open the compare view from the app: a key binding and command palette entries.

An app offers comparisons by implementing `CompareHost`: its `compare_context()`
returns a `CompareContext` (or a sentence saying why a comparison cannot start
now), built from its own state; the promoted column goes to the context's
`on_result`. Wiring in the app:

    from tui.compare.command import CompareCommands, open_compare
    COMMANDS = App.COMMANDS | {CompareCommands}
    Binding("ctrl+d", "compare", "compare", priority=True)    # in BINDINGS
    def action_compare(self) -> None:
        open_compare(self)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, runtime_checkable

from textual.app import App
from textual.command import DiscoveryHit, Hit, Hits

from backend.chat.completion import Mode
from backend.chat.protocol import ChatMessage
from backend.session.backend import SessionBackend
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SamplescopeError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry, registry_of
from tui.app_registry import app_registry
from tui.compare.columns import (
    MAX_COLUMNS,
    CompareColumn,
    compare_fields,
    format_value,
    preset_columns,
    varied_columns,
)
from tui.compare.result import CompareResult
from tui.compare.screen import DEFAULT_MAX_TOKENS, CompareScreen
from tui.palette_entries import OncePerPalette
from tui.runner import GenerationRunner
from tui.widgets.token_text import TokenPieces

PRESETS_SOURCE = "presets"
TOP_PRESETS = ("ArgMax", "TopK k=40 t=0.8", "TopP p=0.9 t=0.8")


@dataclass(frozen=True, slots=True)
class CompareContext:
    """What the app hands the compare view.

    Attributes:
        model: The app's generation runner (the comparison takes its turn on the
            app's model thread), or a model of the view's own.
        messages: The conversation up to and including the last user turn.
        settings: The current sliders (their seed is the comparison's seed).
        on_result: Called with the promoted column, or None when the view is closed.
        pieces: Shows any token id for the probability panel (the app's).
        max_tokens: Tokens per column at most.
        mode: The chat's mode ("completion": the columns continue the document).
    """

    model: GenerationRunner | SessionBackend
    messages: Sequence[ChatMessage]
    settings: SamplerSettings
    on_result: Callable[[CompareResult | None], None]
    pieces: TokenPieces | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    mode: Mode = "chat"


@runtime_checkable
class CompareHost(Protocol):
    """An app that can open the compare view on its conversation."""

    def compare_context(self) -> CompareContext | str:
        """What the view needs, or why a comparison cannot start now."""
        ...


def last_user_turn(messages: Sequence[ChatMessage]) -> list[ChatMessage] | None:
    """The conversation up to and including its last user turn (None: no user turn)."""
    turns = list(messages)
    while turns and turns[-1].role != "user":
        turns.pop()
    return turns or None


def load_preset_table(registry: Registry = BUILT_IN_REGISTRY) -> dict[str, SamplerSettings]:
    """The presets of `assets/presets.toml`, made with `registry` (empty when the file
    cannot be read)."""
    try:
        from tui.resources import shipped_presets
    except ImportError:
        return {}
    try:
        return shipped_presets(registry)
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
        values: The values of the varied field (default: the field's `variations`).

    Raises:
        SettingsError: No presets, an unknown field, or a bad value.
    """
    if source == PRESETS_SOURCE:
        names = list(presets)[:MAX_COLUMNS]
        return preset_columns(presets, names if len(names) >= 2 else ["ArgMax", "All t=0.8"])
    if source.startswith(PRESETS_SOURCE + ":"):
        return preset_columns(presets, source.split(":", 1)[1].split("|"))
    return varied_columns(
        base,
        source,
        values if values is not None else compare_fields(registry_of(base)).variations[source],
    )


def open_compare(
    app: App[Any],
    source: str = PRESETS_SOURCE,
    values: Sequence[Any] | None = None,
) -> CompareScreen | None:
    """Open the compare view on the app's last user turn.

    Args:
        app: The app; a `CompareHost` (any other app is told it cannot compare).
        source: "presets" or the name of a field to vary (see `build_columns`).
        values: The values of the varied field (default: the field's `variations`).

    Returns:
        The pushed screen, or None when the comparison could not start (the app is
        told why with a notification).
    """
    if any(isinstance(screen, CompareScreen) for screen in app.screen_stack):
        app.notify("a comparison is already open", title="Compare", severity="warning")
        return None
    if not isinstance(app, CompareHost):
        app.notify("this app has no conversation to compare", title="Compare", severity="error")
        return None
    context = app.compare_context()
    if isinstance(context, str):
        app.notify(context, title="Compare", severity="warning")
        return None
    presets = load_preset_table(registry_of(context.settings))
    try:
        columns = build_columns(source, context.settings, presets, values)
    except SamplescopeError as exc:
        app.notify(str(exc), title="Compare", severity="error")
        return None
    screen = CompareScreen(
        context.model,
        context.messages,
        columns,
        context.settings.seed,
        base=context.settings,
        presets=presets,
        max_tokens=context.max_tokens,
        pieces=context.pieces,
        mode=context.mode,
    )
    app.push_screen(screen, context.on_result)
    return screen


def command_entries(registry: Registry = BUILT_IN_REGISTRY) -> list[tuple[str, str, str]]:
    """(title, source, help) of every palette command, presets first (a field to vary
    of each of `registry`'s settings that has variations)."""
    entries = [
        (
            "Compare: four basic presets",
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
    for field, values in compare_fields(registry).variations.items():
        shown = " / ".join(format_value(v, registry=registry) for v in values)
        entries.append(
            (
                f"Compare: vary {field.replace('_', '-')}",
                field,
                f"Regenerate the last reply with {field} {shown} (current sliders, one seed)",
            )
        )
    return entries


class CompareCommands(OncePerPalette[tuple[str, str, str]]):
    """Command palette entries that open the compare view."""

    def make_entries(self) -> list[tuple[str, str, str]]:
        """The compare commands of the app's registry."""
        return command_entries(app_registry(self.app))

    async def discover(self) -> Hits:
        for title, source, help_text in self.entries():
            yield DiscoveryHit(title, partial(open_compare, self.app, source), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, source, help_text in self.entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(title),
                    partial(open_compare, self.app, source),
                    text=title,
                    help=help_text,
                )
