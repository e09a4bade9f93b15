"""The reply text of a compare column, drawn with the shared token look.

The tokens are laid out as one rich `Text` whose spans carry the token index in
their style's meta, so a mouse click finds its token without layout arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.style import Style
from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget

from backend.chat.events import TokenEvent
from tui.display import display_text
from tui.widgets.token_look import TokenMarks, styled_runs
from tui.widgets.token_text import token_text

NOTICE_STYLE = Style(italic=True, color="#e06c75")
"""A column's notices and errors."""
DELETION_MARK = "‸"
"""Where reference tokens are left out."""
DELETION_STYLE = Style(bold=True, color="#e06c75")


class ColumnText(Widget):
    """A column's tokens with their marks (`TokenMarks`), and its error if it failed."""

    class Clicked(Message):
        """Token `index` was clicked."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tokens: Sequence[TokenEvent] = ()
        self.marks = TokenMarks()
        self.error = ""
        self.deletions: Mapping[int, int] = {}

    def show(
        self,
        tokens: Sequence[TokenEvent],
        marks: TokenMarks,
        error: str = "",
        deletions: Mapping[int, int] | None = None,
    ) -> None:
        """Draw `tokens` with `marks`, then `error` (when the generation failed).

        Args:
            deletions: Token index → how many reference tokens are left out before
                it (the tokens' count: at the end), each drawn as `DELETION_MARK`.
        """
        self.tokens = tokens
        self.marks = marks
        self.error = error
        self.deletions = deletions or {}
        self.refresh(layout=True)

    def text(self, upto: int | None = None) -> Text:
        """The tokens (the first `upto` of them) as styled text, then the error."""
        text = Text(no_wrap=False, overflow="fold")
        marks = self.marks
        tokens = self.tokens if upto is None else self.tokens[:upto]
        deletions = self.deletions
        for event in tokens:
            index = event.index
            if index in deletions:
                text.append(DELETION_MARK, DELETION_STYLE)
            meta = Style(meta={"token": index})
            shown = token_text(event, marked=marks.marked(index))
            for run, extra in styled_runs(shown, marks.look(index, event.step.prob)):
                text.append(run, meta if extra is None else extra + meta)
        if upto is None and len(self.tokens) in deletions:
            text.append(DELETION_MARK, DELETION_STYLE)
        if upto is None and self.error:
            text.append(f"\n{display_text(self.error)}", NOTICE_STYLE)
        return text

    def line_of(self, index: int, width: int) -> int:
        """The line (0-based) where token `index` ends, wrapped to `width` cells."""
        return max(0, len(self.text(upto=index + 1).wrap(self.app.console, width)) - 1)

    def render(self) -> Text:
        return self.text()

    def on_click(self, event: events.Click) -> None:
        """Say which token is under the mouse."""
        index = event.style.meta.get("token")
        if isinstance(index, int):
            event.stop()
            self.post_message(self.Clicked(index))
