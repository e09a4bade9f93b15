"""A one-line slider: mouse click/drag, arrow keys (fine and coarse), typed entry."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widget import Widget

from tui.widgets.entry import ValueEntryScreen, covered

_LABEL_WIDTH = 12
_VALUE_WIDTH = 7
_ADJUST = Binding.Group("adjust", compact=True)
_COARSE = Binding.Group("coarse", compact=True)


class Slider(Widget, can_focus=True):
    """A numeric slider for one sampler setting.

    The bar spans `minimum` .. `maximum`; keys may go from `hard_minimum` up to
    `hard_maximum` (outside its span the bar shows empty or full). Enter asks for a
    typed value in a dialog (`Typed`); the owner decides what a typed value means.

    Args:
        field: The settings field it controls (also used as the widget id).
        label: What it is called on screen.
        minimum: The left end of the bar.
        maximum: The right end of the bar.
        step: The fine step (arrow keys).
        coarse: The coarse step (shift+arrows, page up/down).
        value: The starting value.
        integer: Whether values are integers.
        hard_minimum: The smallest value the keys may reach (default `minimum`).
        hard_maximum: The largest value the keys may reach (default `maximum`).
        decimals: Decimals shown (floats).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "nudge(-1)", "fine", key_display="←", group=_ADJUST),
        Binding("right", "nudge(1)", "fine", key_display="→", group=_ADJUST),
        Binding("shift+left,pagedown", "nudge(-10)", "coarse", key_display="⇧←", group=_COARSE),
        Binding("shift+right,pageup", "nudge(10)", "coarse", key_display="⇧→", group=_COARSE),
        Binding("home", "to_end(0)", "min", show=False),
        Binding("end", "to_end(1)", "max", show=False),
        # priority: the dialog opens as the app reads the key, before the next key
        # (a second Enter, the value typed straight after) is handed to anyone.
        Binding("enter", "edit", "type value", priority=True),
    ]

    class Changed(Message):
        """The user moved the slider."""

        def __init__(self, slider: Slider, value: float) -> None:
            super().__init__()
            self.slider = slider
            self.value = value

        @property
        def control(self) -> Slider:
            """The slider that changed."""
            return self.slider

    class Typed(Message):
        """The user typed a value (Enter, then the dialog), other than the one shown."""

        def __init__(self, slider: Slider, text: str) -> None:
            super().__init__()
            self.slider = slider
            self.text = text

        @property
        def control(self) -> Slider:
            """The slider typed into."""
            return self.slider

    def __init__(
        self,
        field: str,
        label: str,
        *,
        minimum: float,
        maximum: float,
        step: float,
        coarse: float,
        value: float,
        integer: bool = False,
        hard_minimum: float | None = None,
        hard_maximum: float | None = None,
        decimals: int = 2,
    ) -> None:
        super().__init__(id=f"slider-{field}")
        self.field = field
        self.label = label
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.coarse = coarse
        self.integer = integer
        self.hard_minimum = minimum if hard_minimum is None else hard_minimum
        self.hard_maximum = maximum if hard_maximum is None else hard_maximum
        self.decimals = 0 if integer else decimals
        self._value = value
        self._dragging = False

    @property
    def value(self) -> float:
        """The current value."""
        return self._value

    def set_value(self, value: float) -> None:
        """Show `value` without posting `Changed` (the settings changed elsewhere)."""
        if value != self._value:
            self._value = value
            self.refresh()

    def format_value(self, value: float | None = None) -> str:
        """The value as shown."""
        shown = self._value if value is None else value
        if self.integer:
            return str(int(shown))
        text = f"{shown:.{self.decimals}f}"
        # -0 typed, or a tiny negative rounded away, reads as 0, never "-0.00".
        return text.removeprefix("-") if float(text) == 0 else text

    def _snap(self, value: float) -> float:
        if self.integer:  # integer math: seeds go up to 2**64 - 1, beyond float precision
            whole = value if isinstance(value, int) else round(value)
            return min(max(whole, int(self.hard_minimum)), int(self.hard_maximum))
        value = min(max(value, self.hard_minimum), self.hard_maximum)
        steps = round((value - self.minimum) / self.step)
        snapped = self.minimum + steps * self.step
        snapped = min(max(snapped, self.hard_minimum), self.hard_maximum)
        return round(snapped, self.decimals + 2)

    def _user_set(self, value: float) -> None:
        snapped = self._snap(value)
        if snapped != self._value:
            self._value = snapped
            self.refresh()
            self.post_message(self.Changed(self, snapped))

    def action_nudge(self, steps: int) -> None:
        """Move by fine steps (±1) or coarse steps (±10 means one coarse step)."""
        size = self.coarse if abs(steps) >= 10 else self.step
        direction = 1 if steps > 0 else -1
        self._user_set(self._value + direction * size)

    def action_to_end(self, which: int) -> None:
        """Jump to the bar's minimum (0) or maximum (1)."""
        self._user_set(self.maximum if which else self.minimum)

    def action_edit(self) -> None:
        """Open the dialog to type a value (one at a time); post what is typed."""
        if covered(self):
            return
        kind = "an integer" if self.integer else "a number"
        hint = f"{kind}; the bar spans {self.format_value(self.minimum)}"
        hint += f" to {self.format_value(self.maximum)}. Enter sets it, Esc cancels."
        shown = self.format_value()

        def done(text: str | None) -> None:
            if text and text != shown:  # kept as shown: no write (it may be rounded)
                self.post_message(self.Typed(self, text))

        self.app.push_screen(ValueEntryScreen(self.label, shown, hint), done)

    # -- mouse ---------------------------------------------------------------

    def _bar_span(self) -> tuple[int, int]:
        width = max(3, self.size.width - _LABEL_WIDTH - _VALUE_WIDTH - 2)
        return _LABEL_WIDTH + 1, width

    def _value_at(self, x: int) -> float:
        start, width = self._bar_span()
        fraction = min(max((x - start) / max(1, width - 1), 0.0), 1.0)
        return self.minimum + fraction * (self.maximum - self.minimum)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        start, width = self._bar_span()
        if start - 1 <= event.x <= start + width:
            self._dragging = True
            self.capture_mouse()
            self._user_set(self._value_at(event.x))
            event.stop()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self._dragging:
            self._user_set(self._value_at(event.x))

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self._dragging:
            self._dragging = False
            self.release_mouse()
            event.stop()

    # -- drawing -------------------------------------------------------------

    def render(self) -> Text:
        start, width = self._bar_span()
        del start
        span = self.maximum - self.minimum
        fraction = 0.0 if span <= 0 else (min(self._value, self.maximum) - self.minimum) / span
        handle = round(min(max(fraction, 0.0), 1.0) * (width - 1))
        label_style = "bold reverse" if self.has_focus else "bold"
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{self.label:<{_LABEL_WIDTH}}"[:_LABEL_WIDTH], style=label_style)
        text.append(" ")
        text.append("━" * handle, style="bold cyan")
        text.append("●", style="bold yellow" if self.has_focus else "bold white")
        text.append("─" * (width - handle - 1), style="grey42")
        text.append(" ")
        text.append(f"{self.format_value():>{_VALUE_WIDTH}}", style="bold")
        return text

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
