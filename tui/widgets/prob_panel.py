"""The probability panel: the top candidates of one step as bars, with the cutoff."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.widget import Widget

from sampling.records import Step

_PIECE_WIDTH = 12
_NUMBER_WIDTH = 6
_HEADER_LINES = 4
_FILTER_NAMES = {
    "top_k": "top-k",
    "top_p": "top-p",
    "min_p": "min-p",
    "greedy": "greedy",
    "none": "none",
}


def _fit(piece: str, width: int) -> str:
    if len(piece) > width:
        return piece[: width - 1] + "…"
    return f"{piece:<{width}}"


def _percent(value: float) -> str:
    if value >= 0.9995:
        return "100%"
    if value < 0.0005:
        return "0.0%" if value > 0 else "0"
    return f"{value * 100:.1f}%"


def settings_summary(step: Step) -> str:
    """The step's settings in one short line."""
    s = step.settings
    return (
        f"T {s.temperature:.2f} · k {s.top_k} · p {s.top_p:.2f} · min-p {s.min_p:.2f}"
        f" · rep {s.repeat_penalty:.2f}×{s.repeat_last_n}"
    )


class ProbPanel(Widget):
    """Shows one step: candidates with probability before and after the filters."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "probabilities"
        self._step: Step | None = None
        self._title = ""
        self._pieces: Callable[[int], str] = lambda token_id: f"#{token_id}"

    @property
    def step(self) -> Step | None:
        """The step shown."""
        return self._step

    def show(self, step: Step | None, title: str, pieces: Callable[[int], str]) -> None:
        """Show `step` (None: nothing yet), titled `title` (e.g. "token 7 · latest")."""
        if step is self._step and title == self._title:
            return
        self._step = step
        self._title = title
        self._pieces = pieces
        self.refresh()

    def render(self) -> Text:
        width = max(20, self.size.width)
        step = self._step
        if step is None:
            return Text("No token yet: send a message to see its candidates.", style="grey50")
        lines: list[Text] = []
        chosen_piece = self._pieces(step.token_id)
        head = Text(no_wrap=True, overflow="ellipsis")
        head.append(self._title, style="bold")
        head.append("  ")
        head.append(_fit(chosen_piece, 14).rstrip(), style="bold reverse")
        head.append(f" · p {step.prob:.3f}")
        lines.append(head)
        draw = "—" if step.draw is None else f"{step.draw:.4f}"
        order = "T last" if step.settings.temperature_last else "T first"
        cut = _FILTER_NAMES.get(step.cut_by, step.cut_by)
        lines.append(
            Text(
                f"H {step.entropy:.2f} nats · u {draw} · {step.n_kept} kept · {order}",
                no_wrap=True,
                overflow="ellipsis",
            )
        )
        lines.append(
            Text(settings_summary(step), style="grey62", no_wrap=True, overflow="ellipsis")
        )
        bar_width = max(4, width - 2 - _PIECE_WIDTH - 1 - 1 - 2 * (_NUMBER_WIDTH + 1))
        header = Text(no_wrap=True, overflow="ellipsis")
        header.append(f"  {'token':<{_PIECE_WIDTH}} {'':<{bar_width}} ", style="grey62")
        header.append(f"{'before':>{_NUMBER_WIDTH}} {'after':>{_NUMBER_WIDTH}}", style="grey62")
        lines.append(header)

        rows = max(1, self.size.height - _HEADER_LINES - 1)
        candidates = step.candidates[:rows]
        first_cut = next((i for i, c in enumerate(candidates) if not c.kept), None)
        for index in range(len(candidates)):
            if index == first_cut:
                lines.append(self._cut_line(f"✂ {cut} · {step.n_kept} kept", width))
            lines.append(self._row(step, index, bar_width))
        if first_cut is None:
            if step.cut_by == "none":
                lines.append(self._cut_line(f"no cut · {step.n_kept} kept", width, "grey50"))
            else:
                lines.append(self._cut_line(f"✂ {cut} below · {step.n_kept} kept", width))
        result = Text("\n").join(lines)
        result.no_wrap = True
        return result

    def _row(self, step: Step, index: int, bar_width: int) -> Text:
        candidate = step.candidates[index]
        chosen = candidate.token_id == step.token_id
        row = Text(no_wrap=True, overflow="ellipsis")
        row.append("▶ " if chosen else "  ", style="bold yellow")
        piece_style = "bold yellow" if chosen else ("" if candidate.kept else "grey50")
        row.append(_fit(self._pieces(candidate.token_id), _PIECE_WIDTH), style=piece_style)
        row.append(" ")
        after = round(candidate.prob_after * bar_width)
        before = round(candidate.prob_before * bar_width)
        bar_colour = "yellow" if chosen else ("green" if candidate.kept else "red")
        after = min(after, bar_width)
        before = min(max(before, after), bar_width)
        row.append("█" * after, style=bar_colour)
        row.append("░" * (before - after), style="grey50")
        row.append(" " * (bar_width - before))
        row.append(" ")
        row.append(f"{_percent(candidate.prob_before):>{_NUMBER_WIDTH}} ", style="grey70")
        shown_after = _percent(candidate.prob_after) if candidate.kept else "—"
        row.append(f"{shown_after:>{_NUMBER_WIDTH}}", style="bold" if candidate.kept else "grey50")
        return row

    @staticmethod
    def _cut_line(label: str, width: int, style: str = "bold red") -> Text:
        body = f"── {label} "
        return Text(body + "─" * max(0, width - len(body)), style=style, no_wrap=True)
