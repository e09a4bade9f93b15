"""A one-line choice between a few values: Enter/space/arrows or a click cycles it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widget import Widget

_LABEL_WIDTH = 12


class Toggle(Widget, can_focus=True):
    """Cycles through `choices` (value, shown) for one sampler setting.

    Args:
        field: The settings field it controls (also used as the widget id).
        label: What it is called on screen.
        choices: (value, text shown) pairs.
        value: The starting value.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,space,right", "cycle(1)", "switch"),
        Binding("left", "cycle(-1)", "switch back", show=False),
    ]

    class Changed(Message):
        """The user switched the toggle."""

        def __init__(self, toggle: Toggle, value: object) -> None:
            super().__init__()
            self.toggle = toggle
            self.value = value

        @property
        def control(self) -> Toggle:
            """The toggle that changed."""
            return self.toggle

    def __init__(
        self, field: str, label: str, choices: Sequence[tuple[object, str]], value: object
    ) -> None:
        super().__init__(id=f"toggle-{field}")
        self.field = field
        self.label = label
        self.choices = tuple(choices)
        self._value = value

    @property
    def value(self) -> object:
        """The current value."""
        return self._value

    def set_value(self, value: object) -> None:
        """Show `value` without posting `Changed`."""
        if value != self._value:
            self._value = value
            self.refresh()

    def _index(self) -> int:
        for index, (value, _) in enumerate(self.choices):
            if value == self._value:
                return index
        return 0

    def action_cycle(self, delta: int) -> None:
        """Switch to the next (or previous) choice."""
        index = (self._index() + delta) % len(self.choices)
        self._value = self.choices[index][0]
        self.refresh()
        self.post_message(self.Changed(self, self._value))

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.action_cycle(1)

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        label_style = "bold reverse" if self.has_focus else "bold"
        text.append(f"{self.label:<{_LABEL_WIDTH}}"[:_LABEL_WIDTH], style=label_style)
        text.append(" ")
        current = self._index()
        for index, (_, shown) in enumerate(self.choices):
            if index:
                text.append(" ")
            if index == current:
                text.append(f"[{shown}]", style="bold yellow" if self.has_focus else "bold cyan")
            else:
                text.append(f" {shown} ", style="grey50")
        return text

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
