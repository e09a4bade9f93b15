"""The chain's order: one row per sampler, reordered and switched from the keyboard."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.widget import Widget

_LABEL_WIDTH = 12
_WINDOW = 8
"""At most this many rows show at once; the window follows the cursor (the registry's
samplers and the plugins outnumber what a small terminal's panel can hold)."""
_ORDER = Binding.Group("order", compact=True)


class ChainOrder(Widget, can_focus=True):
    """The sampler chain in order; the samplers switched off are listed where they were.

    The row under the cursor moves up or down with shift+↑/↓ (or [ and ]); space
    switches it off and on. Each change posts `Changed` with the new order of the
    samplers that are on; the widget shows the order it is given back (`set_order`),
    so a refused order snaps back.

    Args:
        field: The settings field it controls (also used in the widget id).
        label: What it is called on screen.
        names: Every sampler the chain may hold, in a default order.
        order: The samplers that are on, in chain order.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "prev", show=False),
        Binding("down", "cursor(1)", "next", show=False),
        Binding("shift+up,left_square_bracket", "move(-1)", "move up", key_display="⇧↑"),
        Binding("shift+down,right_square_bracket", "move(1)", "move down", key_display="⇧↓"),
        Binding("space,enter", "switch", "on/off", key_display="space", group=_ORDER),
    ]

    class Changed(Message):
        """The user asked for a new order (not validated yet).

        Attributes:
            chain: The widget.
            order: The samplers that are on, in the order asked for.
        """

        def __init__(self, chain: ChainOrder, order: tuple[str, ...]) -> None:
            super().__init__()
            self.chain = chain
            self.order = order

        @property
        def control(self) -> ChainOrder:
            """The widget that changed."""
            return self.chain

    def __init__(self, field: str, label: str, names: Sequence[str], order: Sequence[str]) -> None:
        super().__init__(id=f"order-{field}")
        self.field = field
        self.label = label
        self._names = tuple(names)
        self._rows: list[tuple[str, bool]] = rows_for(self._names, [], tuple(order))
        self._cursor = 0
        self._top = 0

    @property
    def names(self) -> tuple[str, ...]:
        """Every sampler the chain may hold, in the editor's default order."""
        return self._names

    @property
    def value(self) -> tuple[str, ...]:
        """The samplers that are on, in order."""
        return tuple(name for name, on in self._rows if on)

    @property
    def rows(self) -> tuple[tuple[str, bool], ...]:
        """Every row shown: (sampler, whether it is on), top to bottom."""
        return tuple(self._rows)

    @property
    def cursor(self) -> int:
        """The row under the cursor."""
        return self._cursor

    def set_value(self, order: Sequence[str]) -> None:
        """Show `order` without posting `Changed` (the settings changed elsewhere)."""
        rows = rows_for(self._names, self._rows, tuple(order))
        if rows != self._rows:
            self._rows = rows
            self.refresh()

    def action_cursor(self, delta: int) -> None:
        """Move the cursor one row up (-1) or down (1)."""
        self._cursor = min(max(self._cursor + delta, 0), len(self._rows) - 1)
        self._follow()
        self.refresh()

    def _follow(self) -> None:
        """Scroll the window of rows so that the cursor is in it."""
        if self._cursor < self._top:
            self._top = self._cursor
        elif self._cursor >= self._top + _WINDOW:
            self._top = self._cursor - _WINDOW + 1

    def action_move(self, delta: int) -> None:
        """Move the sampler under the cursor one place up (-1) or down (1)."""
        target = self._cursor + delta
        if not 0 <= target < len(self._rows):
            return
        rows = list(self._rows)
        rows[self._cursor], rows[target] = rows[target], rows[self._cursor]
        self._cursor = target
        self._follow()
        self._ask(rows)

    def action_switch(self) -> None:
        """Switch the sampler under the cursor off, or back on."""
        rows = list(self._rows)
        name, on = rows[self._cursor]
        rows[self._cursor] = (name, not on)
        self._ask(rows)

    def _ask(self, rows: list[tuple[str, bool]]) -> None:
        before = self.value
        self._rows = rows
        self.refresh()
        if self.value != before:
            self.post_message(self.Changed(self, self.value))

    def on_click(self, event: events.Click) -> None:
        row = event.y + self._top
        if 0 <= event.y < _WINDOW and row < len(self._rows):
            self._cursor = row
            self.refresh()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return min(len(self._rows), _WINDOW)

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        label_style = "bold reverse" if self.has_focus else "bold"
        position = 0
        shown = range(self._top, self._top + _WINDOW)
        for index, (name, on) in enumerate(self._rows):
            if on:
                position += 1
            if index not in shown:
                continue
            if index > self._top:
                text.append("\n")
            label = self.label if index == self._top else ""
            text.append(
                f"{label:<{_LABEL_WIDTH}}"[:_LABEL_WIDTH], style=label_style if label else ""
            )
            text.append(" ")
            under_cursor = index == self._cursor and self.has_focus
            mark = f"{position:>2}. " if on else " ·  "
            style = "bold cyan" if on else "grey50 strike"
            if under_cursor:
                style = "bold yellow reverse" if on else "yellow reverse strike"
            text.append(mark, style="grey62")
            text.append(name, style=style)
            if not on:
                text.append("  off", style="grey50")
        return text

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


def rows_for(
    names: Sequence[str], previous: Sequence[tuple[str, bool]], order: tuple[str, ...]
) -> list[tuple[str, bool]]:
    """The rows showing `order`: its samplers on, in order, and every other one off.

    A sampler that is off stays after the row it followed before (in `previous`), or
    takes its place in `names` when it was not shown yet, so switching one off and on
    does not move it.
    """
    rows: list[tuple[str, bool]] = [(name, True) for name in order]
    shown_before = [name for name, _ in previous]
    for name in shown_before + [n for n in names if n not in shown_before]:
        if name in order or any(name == row for row, _ in rows):
            continue
        source = shown_before if name in shown_before else list(names)
        at = source.index(name)
        predecessors = source[:at]
        place = 0
        for index, (row, _) in enumerate(rows):
            if row in predecessors:
                place = index + 1
        rows.insert(place, (name, False))
    return rows
