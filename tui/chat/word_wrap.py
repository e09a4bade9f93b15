"""Word wrap over token pieces: runs of text laid out into lines of a given width.

A reply is a sequence of runs, each a piece of text with the token it belongs to (or
`NO_TOKEN`) and an extra style. Lines wrap at spaces (the space at a line's end is
dropped); a word made of several tokens wraps as a whole; a word longer than a line
is broken. Keeping the runs lets the reply view map a cell back to its token.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.style import Style

NO_TOKEN = -1
"""The index of a run that belongs to no token (a note, a mark)."""
_CHUNK = re.compile(r"\s*\S+|\s+")

Run = tuple[str, int, Style | None]
"""One run of text on a line: (text, token index or `NO_TOKEN`, extra style or None)."""


class WrappedLines:
    """Runs laid out into lines of `width` cells.

    Attributes:
        width: The cells a line holds.
        lines: The lines, each a list of runs.
        line_width: The cells used on the last line.
    """

    def __init__(self, width: int = 0) -> None:
        self.width = width
        self.lines: list[list[Run]] = [[]]
        self.line_width = 0

    def clear(self) -> None:
        """Start again from one empty line."""
        self.lines = [[]]
        self.line_width = 0

    def place(self, text: str, index: int, style: Style | None) -> None:
        """Lay out `text` as runs of `index` with `style`: its newlines end lines, and
        lines wrap at spaces (a word longer than a line is broken)."""
        for number, part in enumerate(text.split("\n")):
            if number:
                self.newline()
            for chunk in _CHUNK.findall(part):
                self._place_chunk(chunk, index, style)

    def place_unbroken(self, note: str, style: Style | None, gap: str = "  ") -> None:
        """A note `gap` after the text, or on a line of its own when it does not fit
        the line's end: broken only between its " · " parts, never inside one ("logp"
        away from its number)."""
        parts = note.split(" · ")
        if cell_len(note) > self.width and len(parts) > 1:  # wider than a line
            for number, part in enumerate(parts):
                self.place_unbroken(part, style, gap if number == 0 else " · ")
            return
        if self.line_width and self.line_width + len(gap) + cell_len(note) > self.width:
            self.newline()
            self.place(note, NO_TOKEN, style)
        else:
            self.place(f"{gap}{note}" if self.line_width else note, NO_TOKEN, style)

    def drop_empty_line(self) -> None:
        """Drop the last line if it is empty and not the only one (what follows goes
        on the line before)."""
        if not self.line_width and not self.lines[-1] and len(self.lines) > 1:
            self.lines.pop()
            self.line_width = sum(cell_len(run[0]) for run in self.lines[-1])

    def newline(self) -> None:
        """End the line."""
        self.lines.append([])
        self.line_width = 0

    def _place_chunk(self, chunk: str, index: int, style: Style | None) -> None:
        width = cell_len(chunk)
        if self.line_width + width <= self.width:
            self._add(chunk, index, style, width)
            return
        if chunk[:1].isspace():
            # Wrap at the space: the space itself is dropped at the end of the line.
            self.newline()
            chunk = chunk.lstrip()
            width = cell_len(chunk)
        elif not self._carry_word():
            self.newline()
        while width > self.width - self.line_width:  # longer than a line: hard breaks
            room = self.width - self.line_width
            cut = cut_at_cells(chunk, room)
            if cut == 0:
                self.newline()
                continue
            self._add(chunk[:cut], index, style, cell_len(chunk[:cut]))
            self.newline()
            chunk = chunk[cut:]
            width = cell_len(chunk)
        if chunk:
            self._add(chunk, index, style, width)

    def _carry_word(self) -> bool:
        """Move the unfinished word at the end of the line onto a new line.

        A word made of several tokens ("walk" + "ing") wraps as a whole. Returns
        False (nothing moved) when the line ends in a space or is all one word.
        """
        line = self.lines[-1]
        for position in range(len(line) - 1, -1, -1):
            text, index, style = line[position]
            if text[-1:].isspace():  # the word starts with the next run
                kept, tail = line[: position + 1], line[position + 1 :]
                break
            space = max(text.rfind(" "), text.rfind("\t"))
            if space >= 0:
                kept = [*line[:position], (text[: space + 1], index, style)]
                tail = [(text[space + 1 :], index, style), *line[position + 1 :]]
                break
        else:
            return False
        if not tail:
            return False
        self._move(kept, tail)
        return True

    def _move(self, kept: list[Run], tail: list[Run]) -> None:
        self.lines[-1] = kept
        self.lines.append(list(tail))
        self.line_width = sum(cell_len(run[0]) for run in tail)

    def _add(self, text: str, index: int, style: Style | None, width: int) -> None:
        line = self.lines[-1]
        if line and line[-1][1] == index and line[-1][2] is style:
            line[-1] = (line[-1][0] + text, index, style)
        else:
            line.append((text, index, style))
        self.line_width += width


def cut_at_cells(text: str, cells: int) -> int:
    """How many characters of `text` fit in `cells` cells."""
    used = 0
    for position, char in enumerate(text):
        used += cell_len(char)
        if used > cells:
            return position
    return len(text)
