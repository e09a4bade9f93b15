"""A one-line typed setting: a label and an input, Enter asks for the text."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label


class TextSetting(Horizontal):
    """A setting typed as text (DRY's sequence breakers, logit bias).

    Enter posts `Changed` with the text as typed; the owner reads it (a token's text
    is resolved by the model's tokenizer) and calls `set_value` with what is in force.

    Args:
        field: The settings field it controls (also used in the widget id).
        label: What it is called on screen.
        text: The value shown at the start, as text.
        placeholder: Shown when the input is empty.
    """

    class Changed(Message):
        """The user typed a new value and pressed Enter (not read yet).

        Attributes:
            setting: The widget.
            value: The text typed.
        """

        def __init__(self, setting: TextSetting, value: str) -> None:
            super().__init__()
            self.setting = setting
            self.value = value

        @property
        def control(self) -> TextSetting:
            """The widget that changed."""
            return self.setting

    def __init__(self, field: str, label: str, text: str, placeholder: str = "") -> None:
        super().__init__(id=f"text-{field}")
        self.field = field
        self.label = label
        self._input = Input(text, placeholder=placeholder, compact=True, id=f"input-{field}")

    @property
    def value(self) -> str:
        """The text in the input."""
        return self._input.value

    def compose(self) -> ComposeResult:
        yield Label(self.label, markup=False, classes="setting-label")
        yield self._input

    def set_value(self, text: str) -> None:
        """Show `text`, the value in force, in the input."""
        if self._input.value != text:
            self._input.value = text

    def focus(self, scroll_visible: bool = True) -> TextSetting:
        self._input.focus(scroll_visible)
        return self

    @on(Input.Submitted)
    def _on_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Changed(self, event.value))
