"""The tail plot: one step's probability by rank on a log scale, drawn by textual-plot.

Before the filters (the penalised distribution at temperature 1) and after (what
the draw used), the kept ranks shaded and the cut drawn where it fell. The ranks
come from the step's `RankTail` (recorded while the plot is shown), else from its
top-N table. Hidden until its key shows it (and on a short terminal); while shown,
the steps record their deeper ranks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from textual_plot import HiResMode, PlotWidget
from textual_plot.axis_formatter import NumericAxisFormatter

from sampling.records import Step
from tui.chat.selection import ChatPanel, PanelHost, Selection

TAIL_RANKS = 256
"""How many ranks the plot asks each step to record."""
LOWEST_POWER = -12
"""The plot's floor: probabilities below 1e-12 are not drawn."""


def kept_rows(step: Step, ranks: int) -> npt.NDArray[np.bool_]:
    """Which of the step's first `ranks` ranks survived the filters.

    A rank is kept when its probability after the filters is nonzero: the kept set
    need not be a prefix of the order (XTC removes the head, typical-p the middle).
    """
    return ranked_probs(step)[1][:ranks] > 0.0


def ranked_probs(step: Step) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The step's probabilities by rank, before and after the filters, as deep as recorded."""
    tail = step.tail
    if tail is not None:
        return tail.prob_before.astype(np.float64), tail.prob_after.astype(np.float64)
    return np.asarray(step.table.prob_before), np.asarray(step.table.prob_after)


class PowerFormatter(NumericAxisFormatter):
    """Labels a log10 axis with powers of ten (1, 1e-3, ...), ticks on whole powers."""

    def get_ticks(self, min_: float, max_: float, max_ticks: int = 8) -> list[float]:
        low, high = math.ceil(min_), math.floor(max_)
        step = max(1, math.ceil((high - low + 1) / max(1, max_ticks)))
        return [float(power) for power in range(high, low - 1, -step)][::-1]

    def get_labels_for_ticks(self, ticks: Sequence[float]) -> list[str]:
        return ["1" if tick == 0 else f"1e{int(tick)}" for tick in ticks]


class TailPlot(PlotWidget, ChatPanel, can_focus=False):
    """The selected step's probabilities by rank (log scale), the cut and the kept ranks."""

    NAME = "tail"
    DEFAULT_CSS: ClassVar[str] = """
    TailPlot {
        display: none;
        height: 12;
        border: round $primary-background-lighten-2;
        border-title-color: $text-muted;
    }
    TailPlot.-shown {
        display: block;
    }
    Screen.-short TailPlot {
        display: none;
    }
    """

    def __init__(self, host: PanelHost) -> None:
        super().__init__(id=self.NAME, allow_pan_and_zoom=False)
        self.host = host
        self.border_title = "tail"
        self._step: Step | None = None

    @property
    def shown(self) -> bool:
        """Whether its key showed it."""
        return self.has_class("-shown")

    def toggle(self) -> None:
        """Show or hide it; the steps record their deeper ranks while it is shown."""
        shown = not self.shown
        self.set_class(shown, "-shown")
        self.host.live.tail_ranks = TAIL_RANKS if shown else 0
        self.redraw()

    def watch_selected(self, selection: Selection) -> None:
        if self.shown:
            self.show(selection.step)

    @property
    def step(self) -> Step | None:
        """The step drawn."""
        return self._step

    def on_mount(self) -> None:
        super().on_mount()
        self.margin_top = 0
        self.margin_left = 6
        self.margin_bottom = 2
        self.set_y_formatter(PowerFormatter())
        self.set_xlabel("rank")

    def notify_style_update(self) -> None:
        super().notify_style_update()
        if self.is_mounted:
            self._draw()  # the theme's colours changed

    def show(self, step: Step | None) -> None:
        """Draw `step` (None: an empty plot)."""
        if step is self._step:
            return
        self._step = step
        self._draw()

    def _draw(self) -> None:
        self.clear()
        step = self._step
        if step is None:
            self.border_title = "tail"
            return
        before, after = ranked_probs(step)
        ranks = before.shape[0]
        kept = kept_rows(step, ranks)
        x = np.arange(1, ranks + 1, dtype=np.float64)
        with np.errstate(divide="ignore"):
            log_before = np.log10(before)
            log_after = np.log10(after)
        finite = log_before[np.isfinite(log_before)]
        floor = max(LOWEST_POWER, math.floor(float(finite.min())) if finite.size else -1)
        colours = self.app.get_css_variables()
        self.set_xlimits(0.5, ranks + 0.5)
        self.set_ylimits(floor, 0.0)
        before_colour = colours.get("primary", "blue")
        after_colour = colours.get("success", "green")
        if kept.any():
            shade = colours.get("panel", "grey19")
            self.bar(x[kept], np.full(int(kept.sum()), float(floor)), width=1.0, bar_style=shade)
        braille = HiResMode.BRAILLE
        self.plot(x[kept], log_after[kept], line_style=after_colour, hires_mode=braille)
        self.plot(x, log_before, line_style=before_colour, hires_mode=braille)
        n_kept = int(kept.sum())
        if n_kept < ranks:
            self.add_v_line(n_kept + 0.5, line_style=colours.get("error", "red"))
        chosen = np.flatnonzero(step.table.token_ids == step.token_id)
        if chosen.size and chosen[0] < ranks:
            rank = int(chosen[0])
            self.scatter(
                [rank + 1.0],
                [log_before[rank]],
                marker="◆",
                marker_style=colours.get("warning", "yellow"),
            )
        cut = "no cut" if step.cut_by == "none" else f"✂ {step.cut_by} at {step.n_kept}"
        legend = f"[{before_colour}]━[/]before [{after_colour}]━[/]after"
        self.border_title = f"tail {ranks} · {cut} · {legend}"
