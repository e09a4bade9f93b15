"""Phrases on a line, wrapped only between phrases: a figure and its label ("PPL test
47.05") never part at a narrow width, as a plain `Text` wrapped at any space would."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.text import Text

SEPARATOR = " · "


class Phrases:
    """Phrases joined by " · ", a line broken only before a phrase that would not fit
    (a phrase wider than the line wraps as text does).

    Args:
        phrases: The phrases, in order (plain strings are never parsed as markup).
        style: The style of the whole line.
    """

    def __init__(self, phrases: Sequence[str | Text], style: str = "") -> None:
        self.phrases = [p if isinstance(p, Text) else Text(p) for p in phrases]
        self.style = style

    def lines(self, width: int) -> list[Text]:
        """The phrases laid out in lines of at most `width` cells."""
        lines: list[Text] = []
        line = Text(style=self.style)
        for phrase in self.phrases:
            if line.cell_len and line.cell_len + len(SEPARATOR) + phrase.cell_len > width:
                lines.append(line)
                line = Text(style=self.style)
            if line.cell_len:
                line.append(SEPARATOR)
            line.append_text(phrase)
        lines.append(line)
        return lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        yield from self.lines(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max((p.cell_len for p in self.phrases), default=0)
        whole = sum(p.cell_len for p in self.phrases) + len(SEPARATOR) * max(
            len(self.phrases) - 1, 0
        )
        return Measurement(min(widest, options.max_width), min(whole, options.max_width))

    @property
    def plain(self) -> str:
        """The phrases on one line, as plain text."""
        return SEPARATOR.join(p.plain for p in self.phrases)
