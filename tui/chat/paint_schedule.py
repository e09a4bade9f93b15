"""Which parts of the chat a tick of the redraw timer draws while a reply streams."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Generic, TypeVar

from tui.chat.draw_budget import DrawBudget

TEXT_EVERY = 1
"""While a reply streams, its text is drawn at every tick of the redraw timer
(`tui.runner.FLUSH_HZ`, 10 a second)."""
STATUS_EVERY = 4
"""The status line, every fourth tick (2.5 a second). Each panel has its own rate
(`ChatPanel.PAINT_EVERY`: the bars 5 a second, the plots 2.5).

A repaint has a fixed cost besides its parts (Textual renders the containers under
every changed row), so the parts due at the same tick are drawn in one repaint rather
than taking turns, and each part is drawn only as often as a reader can follow it."""

FULL_REDRAW_EVERY = 3
"""Held to a draw budget, of the redraws with more than the text owed one in this
many draws every part owed (the first of a reply's among them); the others draw the
text alone (about a quarter of the cost of one with the bars and the status:
a compositor refresh of 1.1 ms against 4.3, paced fake reply), so the text keeps its
pace on the CPU the budget allows."""


PartT = TypeVar("PartT", bound=Hashable)


class PaintSchedule(Generic[PartT]):
    """The parts due at each tick, held back by a `DrawBudget` if any.

    A part due while the budget holds redraws back stays owed, and is drawn with the
    next redraw it allows; held to a budget, only one redraw in `FULL_REDRAW_EVERY`
    draws the parts besides the text.

    Args:
        every: Each part (any key: the chat uses its widgets) and the ticks between
            its draws.
        text: The part that is the reply's text.
    """

    def __init__(self, every: Mapping[PartT, int], text: PartT) -> None:
        self.every = dict(every)
        self.text = text
        self.budget: DrawBudget | None = None
        """Set when llama.cpp's threads take every core (`draw_budget.budget_for`)."""
        self._owed: set[PartT] = set()
        self.restart()

    def restart(self) -> None:
        """A reply starts: nothing owed, a fresh budget, the first full redraw due."""
        self._ticks = 0
        self._owed.clear()
        self._text_turns = FULL_REDRAW_EVERY - 1
        """Budgeted redraws of the text alone since the last with every part owed."""
        if self.budget is not None:
            self.budget.restart()

    def tick(self) -> set[PartT]:
        """One tick of the redraw timer: the parts to draw now (often none)."""
        self._ticks += 1
        self._owed |= {part for part, every in self.every.items() if self._ticks % every == 0}
        budget = self.budget
        if not self._owed or (budget is not None and not budget.allows()):
            return set()
        due, self._owed = self._owed, set()
        text = self.text
        if budget is not None and text in due and due != {text}:
            if self._text_turns < FULL_REDRAW_EVERY - 1:
                self._text_turns += 1
                self._owed, due = due - {text}, {text}
            else:
                self._text_turns = 0
        return due
