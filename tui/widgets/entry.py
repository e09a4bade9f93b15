"""A small dialog to type a setting's value, one at a time.

A dialog is opened from the screen on top only (`covered`): an Enter typed twice
before the first dialog shows asks twice, and the second ask is dropped. Keys typed
while the dialog is being shown, before its box has focus, reach the screen rather
than the box: the dialog puts them in the box, in the order typed.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Input, Static
from textual.widgets.input import Selection


def covered(opener: Widget) -> bool:
    """Whether a screen (a dialog already opened) is over `opener`'s: then it opens none.

    Every one-at-a-time screen asks it: a value dialog, a token's alternatives."""
    return opener.app.screen is not opener.screen


class ValueEntryScreen(ModalScreen[str | None]):
    """Asks for one value; Enter returns the text, Escape returns None.

    Args:
        label: What is being set.
        current: The current value, pre-filled.
        hint: The allowed range, shown under the box.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]

    def __init__(self, label: str, current: str, hint: str) -> None:
        super().__init__()
        self._label = label
        self._current = current
        self._hint = hint

    def compose(self) -> ComposeResult:
        with Vertical(id="entry-box"):
            yield Static(Text(f"Set {self._label}", style="bold"))
            # Selected on mount rather than on focus: a key typed before the focus
            # came replaces the value, and the focus coming after keeps what it typed.
            yield Input(value=self._current, id="entry-input", select_on_focus=False)
            yield Static(Text(self._hint, style="grey70"))

    def on_mount(self) -> None:
        box = self.query_one("#entry-input", Input)
        box.selection = Selection(0, len(box.value))

    def on_key(self, event: events.Key) -> None:
        """A character typed before the box had focus came to the screen: into the box
        (the box stops the characters it takes itself; Enter and Esc are bindings)."""
        if not event.is_printable or event.character is None:
            return
        event.stop()
        box = self.query_one("#entry-input", Input)
        selection = box.selection
        if selection.is_empty:
            box.insert_text_at_cursor(event.character)
        else:
            box.replace(event.character, *selection)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
