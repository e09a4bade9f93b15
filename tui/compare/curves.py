"""The compare curves: every column's entropy (or chosen probability) over position.

One plot, drawn by textual-plot, one line per column in the column's colour (the
theme's), each divergence from the reference column marked on its curve and by a
vertical line. The screen calls `show` on its redraw ticks; nothing is redrawn
when no column has a new token.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from textual_plot import HiResMode, PlotWidget

from backend.chat.events import TokenEvent
from tui.compare.column import CompareColumnView

Series = Literal["entropy", "prob"]
COLUMN_COLOURS = ("primary", "warning", "success", "error")
"""The theme colour of each column, in order."""
STREAMING_EVERY = 3
"""While columns stream in, the curves redraw once per this many screen ticks."""
_FALLBACK = ("blue", "yellow", "green", "red")
_TITLES = {"entropy": "entropy (nats)", "prob": "chosen-token probability"}


def column_colour(variables: dict[str, str], index: int) -> str:
    """Column `index`'s colour under the theme's `variables`."""
    slot = index % len(COLUMN_COLOURS)
    return variables.get(COLUMN_COLOURS[slot], _FALLBACK[slot])


def series_values(tokens: Sequence[TokenEvent], series: Series) -> np.ndarray:
    """One value per token: its step's entropy or its chosen probability."""
    if series == "entropy":
        return np.fromiter((t.step.entropy for t in tokens), np.float64, len(tokens))
    return np.fromiter((t.step.prob for t in tokens), np.float64, len(tokens))


class CompareCurves(PlotWidget, can_focus=False):
    """Overlaid per-column curves over token position, divergences marked."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, allow_pan_and_zoom=False)
        self.series: Series = "entropy"
        """What the curves show."""
        self._drawn: tuple[object, ...] | None = None
        self._ticks = 0

    def on_mount(self) -> None:
        super().on_mount()
        self.margin_top = 0
        self.margin_left = 6
        self.margin_bottom = 2

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._drawn = None  # the theme's colours may have changed: the next call redraws

    def cycle(self, views: Sequence[CompareColumnView]) -> None:
        """Show the entropy curves, then the chosen probability's, then hide the plot."""
        if not self.has_class("-shown"):
            self.series = "entropy"
            self.add_class("-shown")
        elif self.series == "entropy":
            self.series = "prob"
        else:
            self.remove_class("-shown")
        self._drawn = None
        self.call_after_refresh(self.show_views, views)

    def show_views(self, views: Sequence[CompareColumnView]) -> None:
        """Draw the compare columns' tokens and divergences (when shown).

        While a column still generates, only every `STREAMING_EVERY`-th call draws: a
        plot costs the UI thread tens of milliseconds, which the decode would feel.
        """
        self._ticks += 1
        running = any(v.finished is None for v in views)
        if self.display and (not running or self._ticks % STREAMING_EVERY == 0):
            self.show([v.tokens for v in views], [v.divergence for v in views])

    def show(
        self, columns: Sequence[Sequence[TokenEvent]], divergences: Sequence[int | None]
    ) -> None:
        """Draw each column's tokens; `divergences[i]` is where column i departs (or None)."""
        key = (self.series, tuple(len(t) for t in columns), tuple(divergences), self.size)
        if key == self._drawn:
            return
        self._drawn = key
        self.clear()
        variables = self.app.get_css_variables()
        longest = max((len(t) for t in columns), default=0)
        self.set_xlimits(0.5, max(longest, 1) + 0.5)
        if self.series == "prob":
            self.set_ylimits(0.0, 1.0)
        else:
            self.set_ylimits(0.0, None)
        for index, tokens in enumerate(columns):
            if not tokens:
                continue
            colour = column_colour(variables, index)
            values = series_values(tokens, self.series)
            x = np.arange(1, len(tokens) + 1, dtype=np.float64)
            self.plot(x, values, line_style=colour, hires_mode=HiResMode.BRAILLE)
            at = divergences[index] if index < len(divergences) else None
            if at is not None and at < len(tokens):
                self.add_v_line(at + 1.0, line_style=colour)
                self.scatter([at + 1.0], [values[at]], marker="◆", marker_style=colour)
        legend = " ".join(
            f"[{column_colour(variables, i)}]━{i + 1}[/]" for i in range(len(columns))
        )
        self.border_title = f"curves · {_TITLES[self.series]} · {legend} · │◆ divergence"
