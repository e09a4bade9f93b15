"""A small dialog to type a setting's value."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


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
            yield Input(value=self._current, id="entry-input", select_on_focus=True)
            yield Static(Text(self._hint, style="grey70"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
