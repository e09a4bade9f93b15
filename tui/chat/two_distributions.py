"""The two-distributions panel: what guidance or contrast did at the selected step.

For a step that combined two distributions (a unit whose report holds the lists of
`sampling.samplers.guidance_report`: guidance's negative prompt, contrast's smaller
model), it shows the step's own distribution, the other one and the combination side
by side, their top tokens with their probabilities, and below them the tokens the
combination raised and lowered the most. Each unit names its three columns
(`distributions`: "reply", "negative", "guided" for guidance). Hidden for a step
without such a report. Model text is appended to the panel's `Text` literally, never
parsed as markup.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from rich.text import Text
from textual.widgets import Static

from sampling.records import Step
from sampling.samplers.base import Report, percent_text
from sampling.samplers.guidance_report import CHANGE_LISTS, TOP_LISTS, token_figures
from sampling.settings.registry import registry_of
from tui.chat.selection import ChatPanel, PanelHost, Selection
from tui.widgets.token_text import TokenPieces

TOP_ROWS = 4
"""How many of each distribution's top tokens the panel shows."""
CHANGE_ROWS = 2
"""How many of the tokens raised (and lowered) the most it shows."""
NUMBER_WIDTH = 6
CHOSEN_STYLE = "bold yellow"


def two_distribution_reports(step: Step) -> Iterator[tuple[str, tuple[str, str, str], Report]]:
    """Each report of `step` that holds two distributions and their combination: the
    unit's name, its columns' names and the report."""
    units = registry_of(step.settings).units_by_name
    for name, report in step.reports.items():
        labels = getattr(units.get(name), "distributions", None)
        if not isinstance(labels, tuple) or len(labels) != len(TOP_LISTS):
            continue
        if any(token_figures(report, top) for top in TOP_LISTS):
            yield name, (str(labels[0]), str(labels[1]), str(labels[2])), report


def _cell(piece: str, number: str, width: int) -> tuple[str, str]:
    """A token's piece cut to fit beside its number in `width` cells."""
    room = max(1, width - NUMBER_WIDTH - 1)
    shown = piece if len(piece) <= room else piece[: room - 1] + "…"
    return f"{shown:<{room}}", f"{number:>{NUMBER_WIDTH}} "


def _heading(name: str, report: Report) -> str:
    """ "guidance ×3 · KL 0.42 nats"."""
    parts = [name]
    scale, divergence = report.get("scale"), report.get("divergence")
    if isinstance(scale, float | int):
        parts.append(f"×{scale:.3g}")
    if isinstance(divergence, float | int):
        parts.append(f"· KL {divergence:.3g} nats")
    return " ".join(parts)


def section_text(
    name: str,
    labels: tuple[str, str, str],
    report: Report,
    chosen: int,
    pieces: TokenPieces,
    width: int,
) -> Text:
    """One unit's report as the panel draws it, `width` cells wide (the chosen token
    highlighted in each column)."""
    text = Text()
    text.append(_heading(name, report) + "\n", style="bold")
    column = max(NUMBER_WIDTH + 3, width // len(TOP_LISTS))
    for label in labels:
        text.append(f"{label:<{column}}"[:column], style="grey62")
    lists = [token_figures(report, top)[:TOP_ROWS] for top in TOP_LISTS]
    for row in range(max(len(tokens) for tokens in lists)):
        text.append("\n")
        for tokens in lists:
            if row >= len(tokens):
                text.append(" " * column)
                continue
            token, prob = tokens[row]
            piece, number = _cell(pieces(token), percent_text(prob), column)
            text.append(piece, style=CHOSEN_STYLE if token == chosen else "")
            text.append(number, style="grey70")
    changes = [token_figures(report, change)[:CHANGE_ROWS] for change in CHANGE_LISTS]
    half = max(NUMBER_WIDTH + 4, width // 2)
    text.append("\n")
    text.append(f"{'↑ raised the most':<{half}}{'↓ lowered the most':<{half}}", style="grey62")
    for row in range(max((len(tokens) for tokens in changes), default=0)):
        text.append("\n")
        for tokens, colour in zip(changes, ("green", "red"), strict=True):
            if row >= len(tokens):
                text.append(" " * half)
                continue
            token, change = tokens[row]
            piece, number = _cell(pieces(token), f"{change * 100:+.1f}%", half)
            text.append(piece, style=CHOSEN_STYLE if token == chosen else "")
            text.append(number, style=colour)
    return text


class TwoDistributions(Static, ChatPanel):
    """The selected step's two distributions and their combination (see the module
    doc); shown only for a step that has them."""

    NAME = "two-distributions"
    PAINT_EVERY = 4
    DEFAULT_CSS: ClassVar[str] = """
    TwoDistributions {
        display: none;
        height: auto;
        border: round $primary-background-lighten-2;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    TwoDistributions.-shown {
        display: block;
    }
    """

    def __init__(self, host: PanelHost) -> None:
        super().__init__("", id=self.NAME, markup=False)
        self.host = host
        self.border_title = "two distributions"
        self._drawn: tuple[Step | None, int] = (None, 0)

    @property
    def shown(self) -> bool:
        """Whether the selected step has two distributions to show."""
        return self.has_class("-shown")

    def watch_selected(self, selection: Selection) -> None:
        self.show(selection.step)

    def on_resize(self) -> None:
        self.show(self._drawn[0], again=True)

    def show(self, step: Step | None, *, again: bool = False) -> None:
        """Draw `step`'s two distributions (hidden when it has none)."""
        width = max(NUMBER_WIDTH * 3, self.content_region.width or 48)
        drawn, drawn_width = self._drawn
        if not again and step is drawn and width == drawn_width:
            return
        self._drawn = (step, width)
        sections = [] if step is None else list(two_distribution_reports(step))
        self.set_class(bool(sections), "-shown")
        if step is None or not sections:
            return
        text = Text()
        for number, (name, labels, report) in enumerate(sections):
            if number:
                text.append("\n")
            text.append_text(
                section_text(name, labels, report, step.token_id, self.host.pieces, width)
            )
        self.update(text)
