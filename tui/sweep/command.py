"""Showing a sweep in the app: its screen over the chat; the sample chosen opens as
the saved chats screen opens a chat."""

from __future__ import annotations

from typing import TYPE_CHECKING

from backend.session.sweep_result import SweepResult
from tui.sweep.screen import SweepScreen

if TYPE_CHECKING:
    from tui.app import SamplescopeApp


def open_sweep(app: SamplescopeApp, result: SweepResult) -> None:
    """Push the sweep's screen; the sample chosen becomes the app's conversation."""
    app.push_screen(SweepScreen(result), app.open_saved_chat)
