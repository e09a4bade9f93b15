"""The sweep's frontier plot: quality against diversity, one point per setting.

Drawn by textual-plot: each setting is its number (1-9, then a, b, ...) at (its
diversity, its mean raw log-probability per token), with error bars of one standard
error over prompts both ways; the Pareto frontier is a line through the settings no
other beats on both; the selected setting's number is drawn reversed.
"""

from __future__ import annotations

import string

import numpy as np
from textual_plot import HiResMode, PlotWidget

from backend.session.sweep_result import DIVERSITY_AXES, SweepResult, metric

MARKS = string.digits[1:] + string.ascii_lowercase + string.ascii_uppercase
"""Each setting's mark on the plot, by index."""
AXIS_NAMES = {
    "ngram_diversity": "n-gram diversity",
    "distinct_2": "distinct-2",
    "compression_ratio": "compression ratio",
    "self_repetition": "self-repetition",
}
"""Each diversity measure's short name (the table's column)."""
AXIS_TITLES = {
    "ngram_diversity": "n-gram diversity (n=1..4) → more diverse",
    "distinct_2": "distinct-2 → more diverse",
    "compression_ratio": "compression ratio ← more diverse",
    "self_repetition": "self-repetition (n=4) ← more diverse",
}


def mark_of(index: int) -> str:
    """Setting `index`'s mark ("·" past the marks there are)."""
    return MARKS[index] if index < len(MARKS) else "·"


class FrontierPlot(PlotWidget, can_focus=False):
    """Quality (raw log-probability per token) against one diversity measure."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, allow_pan_and_zoom=False)
        self._drawn: tuple[object, ...] | None = None
        self.axis = ""
        """The diversity measure drawn (empty before the first `show`)."""

    def on_mount(self) -> None:
        super().on_mount()
        self.margin_top = 1
        self.margin_left = 8
        self.margin_bottom = 3
        self.set_ylabel("logp/token")

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._drawn = None  # the theme's colours may have changed

    def show(self, result: SweepResult, axis: str, selected: int | None) -> None:
        """Draw every setting of `result` against `axis` (see `DIVERSITY_AXES`)."""
        key = (id(result), axis, selected, self.size)
        if key == self._drawn:
            return
        self._drawn = key
        self.axis = axis
        self.clear()
        variables = self.app.get_css_variables()
        point_colour = variables.get("primary", "blue")
        frontier_colour = variables.get("warning", "yellow")
        selected_colour = variables.get("accent", "magenta")
        bar_colour = variables.get("secondary", "cyan")
        points: dict[int, tuple[float, float, float, float]] = {}
        for metrics in result.metrics:
            quality, diversity = metrics.logprob, metric(metrics, axis)
            if quality is None or diversity is None:
                continue
            points[metrics.setting] = (
                diversity.mean,
                quality.mean,
                diversity.stderr or 0.0,
                quality.stderr or 0.0,
            )
        self.set_xlabel(AXIS_TITLES[axis])
        self.border_title = f"quality × diversity · {len(points)} settings · ━ Pareto frontier" + (
            "" if DIVERSITY_AXES[axis] else " (lower is more diverse)"
        )
        if not points:
            return
        values = np.array(list(points.values()), dtype=np.float64)
        self._limits(values)
        self.errorbar(
            values[:, 0],
            values[:, 1],
            xerr=values[:, 2],
            yerr=values[:, 3],
            marker_style=bar_colour,
        )
        frontier = result.frontier(axis)
        if len(frontier) > 1:
            xs = [points[i][0] for i in frontier]
            ys = [points[i][1] for i in frontier]
            self.plot(xs, ys, line_style=frontier_colour, hires_mode=HiResMode.BRAILLE)
        for index, (x, y, _, _) in sorted(points.items(), key=lambda item: item[0] == selected):
            style = (
                f"bold reverse {selected_colour}" if index == selected else f"bold {point_colour}"
            )
            self.scatter([x], [y], marker=mark_of(index), marker_style=style)

    def _limits(self, values: np.ndarray) -> None:
        """Room around the points and their error bars (5% of each span)."""
        for column, setter in ((0, self.set_xlimits), (1, self.set_ylimits)):
            low = float((values[:, column] - values[:, column + 2]).min())
            high = float((values[:, column] + values[:, column + 2]).max())
            pad = (high - low) * 0.05 or max(abs(high) * 0.05, 0.01)
            setter(low - pad, high + pad)
