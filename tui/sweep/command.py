"""Showing a sweep in the app: its screen over the chat; the sample chosen opens as
the saved chats screen opens a chat, with its own settings on the sliders, and
"Sweep: back to the frontier" in the command palette shows the sweep again where it
was left."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from backend.session.sweep_result import SweepResult
from sampling.settings.record import SamplerSettings
from tui.sweep.screen import SweepScreen

BACK_TITLE = "Sweep: back to the frontier"
"""The palette's entry that shows the sweep again."""


class SweepHost(Protocol):
    """What showing a sweep needs of the app (which imports this module)."""

    back_to_sweep: Callable[[], None] | None

    def push_screen(self, screen: SweepScreen, callback: Callable[[int | None], None]) -> Any:
        """Show the sweep's screen; `callback` gets what it closes with."""
        ...

    def open_saved_chat(self, chat_id: int | None) -> None:
        """Make a saved chat the conversation."""
        ...

    def apply_settings(self, settings: SamplerSettings) -> None:
        """Put a whole set of settings on the sliders."""
        ...

    def notify(self, message: str, *, timeout: float | None = None) -> None:
        """Say something in a toast."""
        ...


def open_sweep(
    app: SweepHost, result: SweepResult, *, selected: int = 0, listing: int | None = None
) -> None:
    """Push the sweep's screen (setting `selected` under the cursor, `listing`'s samples
    listed); the sample chosen becomes the app's conversation."""
    screen = SweepScreen(result, selected=selected, listing=listing)

    def chosen(chat_id: int | None) -> None:
        sample = screen.chosen
        if chat_id is None or sample is None:
            return
        app.open_saved_chat(chat_id)
        app.apply_settings(sample_settings(result, sample.figures.setting, sample.seed))
        app.back_to_sweep = lambda: open_sweep(
            app, result, selected=sample.figures.setting, listing=sample.figures.setting
        )
        app.notify(
            f"Sample opened with its settings on the sliders; ctrl+p → {BACK_TITLE!r}"
            " goes back to its list.",
            timeout=10,
        )

    app.push_screen(screen, chosen)


def sample_settings(result: SweepResult, setting: int, seed: int) -> SamplerSettings:
    """The settings a sample was drawn with: its grid point's, with its own seed."""
    return result.plan.settings[setting].settings.with_changes(seed=seed)
