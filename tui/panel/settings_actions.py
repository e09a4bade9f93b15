"""The sampling panel's last group: reset the settings, apply a preset to the sliders,
save the sliders as a preset (the command palette offers the same)."""

from __future__ import annotations

from typing import Literal

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button

SettingsAction = Literal["reset", "apply-preset", "save-preset"]

ACTIONS: tuple[tuple[SettingsAction, str, str], ...] = (
    ("reset", "reset", "Put the settings samplescope started with back"),
    ("apply-preset", "preset…", "Put a preset on the sliders"),
    ("save-preset", "save as…", "Save the sliders as a preset of yours"),
)
"""(action, button label, tooltip) of each button."""


class SettingsActions(Horizontal):
    """Three buttons; each posts `Chosen` with its action for the app to carry out."""

    DEFAULT_CSS = """
    SettingsActions { height: auto; }
    SettingsActions Button { min-width: 0; width: auto; height: 1; border: none;
                             margin: 0 1 0 0; }
    """

    class Chosen(Message):
        """A button was pressed.

        Attributes:
            action: What it asks for.
        """

        def __init__(self, action: SettingsAction) -> None:
            super().__init__()
            self.action = action

    def compose(self) -> ComposeResult:
        for action, label, tooltip in ACTIONS:
            button = Button(label, id=f"settings-{action}", compact=True)
            button.tooltip = tooltip
            yield button

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        for action, _label, _tooltip in ACTIONS:
            if event.button.id == f"settings-{action}":
                self.post_message(self.Chosen(action))
