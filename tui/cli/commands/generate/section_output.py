"""`generate`'s streamed text, the thinking apart from the answer.

A thinking model's thinking is written dimmed when the stream it goes to is a
terminal, and as plain text otherwise (a pipe gets the reply as the model wrote it).
With `--hide-thinking` it goes to stderr instead, and stdout holds the answer alone.
"""

from __future__ import annotations

import sys
from typing import TextIO

from sampling.sections import Section

DIM = "\x1b[2m"
UNDIM = "\x1b[22m"


class SectionOutput:
    """Writes a reply's text token by token, each in its section's place and style.

    Args:
        hide_thinking: Write the thinking to stderr rather than stdout.
    """

    def __init__(self, hide_thinking: bool = False) -> None:
        self.hide_thinking = hide_thinking
        self.dimmed: TextIO | None = None
        """The stream left dimmed by the last write (None: none)."""
        self.ends_line = True
        """Whether stdout's last character out was a line break (or nothing is out)."""
        self.wrote = False

    def write(self, text: str, kind: Section) -> None:
        """Write one token's text."""
        if not text:
            return
        thinking = kind is Section.THINKING
        target = sys.stderr if thinking and self.hide_thinking else sys.stdout
        dim = thinking and target.isatty()
        if self.dimmed is not None and (self.dimmed is not target or not dim):
            self.dimmed.write(UNDIM)
            self.dimmed.flush()
            self.dimmed = None
        if dim and self.dimmed is None:
            target.write(DIM)
            self.dimmed = target
        target.write(text)
        target.flush()
        if target is sys.stdout:
            self.ends_line = text.endswith("\n")
            self.wrote = True

    def end(self) -> None:
        """Undo the dimming, and end stdout's line when the reply left it open (the
        reply's last line ends before stderr's notes)."""
        if self.dimmed is not None:
            self.dimmed.write(UNDIM)
            self.dimmed.flush()
            self.dimmed = None
        if self.wrote and not self.ends_line:
            sys.stdout.write("\n")
        sys.stdout.flush()
