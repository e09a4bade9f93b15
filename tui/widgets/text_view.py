"""A text too long for a notice, shown whole in a scrolling box: Escape or Enter closes it.

The text is shown as it is (never read as markup), indentation kept; it can be selected."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea


class TextViewScreen(ModalScreen[None]):
    """A title, a note under it, and the text, scrolling when taller than the box.

    Args:
        title: What the text is.
        text: The text, shown as it is (wrapped at the box's width).
        note: A line under the title ("" for none).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter", "close", "close"),
    ]
    DEFAULT_CSS = """
    TextViewScreen { align: center middle; }
    #text-view { width: 90%; max-height: 85%; height: auto; border: round $accent;
                 background: $surface; padding: 0 1; }
    #text-view-title, #text-view-note { height: auto; }
    #text-view-text { height: auto; max-height: 100%; border: none; padding: 0; }
    """

    def __init__(self, title: str, text: str, note: str = "") -> None:
        super().__init__()
        self._title = title
        self._text = text
        self._note = note

    def compose(self) -> ComposeResult:
        with Vertical(id="text-view"):
            yield Static(Text(self._title, style="bold"), id="text-view-title")
            if self._note:
                yield Static(Text(self._note, style="grey70"), id="text-view-note")
            yield TextArea(self._text, read_only=True, soft_wrap=True, id="text-view-text")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_close(self) -> None:
        self.dismiss(None)
