"""The reply text of a compare column, drawn with the shared token look.

The tokens are laid out as one rich `Text` whose spans carry the token index in
their style's meta, so a mouse click finds its token without layout arithmetic. A
thinking model's thinking is folded under its summary line as in the chat
(`tui.widgets.thinking_fold`); a click on the line opens or folds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget

from backend.chat.events import TokenEvent
from tui.display import display_text
from tui.widgets.thinking_fold import is_thinking, summary, thinking_spans
from tui.widgets.token_look import CURSOR_STYLE, TokenMarks, styled_runs
from tui.widgets.token_text import token_text

NOTICE_STYLE = Style(italic=True, color="#e06c75")
"""A column's notices and errors."""
DELETION_MARK = "‸"
"""Where reference tokens are left out."""
DELETION_STYLE = Style(bold=True, color="#e06c75")


class ColumnText(Widget):
    """A column's tokens with their marks (`TokenMarks`), and its error if it failed."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "column-text--thinking",
        "column-text--thinking-head",
    }

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
        self.done = False
        """Whether the column's reply ended (a thinking at its end is then whole)."""
        self.thinking_open = False
        """Whether its thinking is shown (else folded under its summary line)."""

    def show(
        self,
        tokens: Sequence[TokenEvent],
        marks: TokenMarks,
        error: str = "",
        deletions: Mapping[int, int] | None = None,
        done: bool = False,
    ) -> None:
        """Draw `tokens` with `marks`, then `error` (when the generation failed).

        Args:
            deletions: Token index → how many reference tokens are left out before
                it (the tokens' count: at the end), each drawn as `DELETION_MARK`.
            done: The reply ended.
        """
        self.done = done
        self.tokens = tokens
        self.marks = marks
        self.error = error
        self.deletions = deletions or {}
        self.refresh(layout=True)

    def folded_at(self, index: int) -> bool:
        """Whether token `index` is in a folded thinking."""
        tokens = self.tokens
        return not self.thinking_open and 0 <= index < len(tokens) and is_thinking(tokens[index])

    def set_thinking_open(self, shown: bool) -> None:
        """Show its thinking, or fold it under its summary line."""
        if shown != self.thinking_open:
            self.thinking_open = shown
            self.refresh(layout=True)

    def text(self, upto: int | None = None) -> Text:
        """The tokens (the first `upto` of them) as styled text, then the error."""
        text = Text(no_wrap=False, overflow="fold")
        marks = self.marks
        tokens = self.tokens if upto is None else self.tokens[:upto]
        deletions = self.deletions
        heads = {span.first: span for span in thinking_spans(self.tokens)}
        dim = self.get_component_rich_style("column-text--thinking", partial=True)
        fold_to = -1  # the last token of the folded thinking being passed
        line_start = False  # the next token starts a line: its spaces left out
        for position, event in enumerate(tokens):
            if position <= fold_to:
                continue
            index = event.index
            span = heads.get(position)
            if span is not None:
                fold_to = self._append_head(text, span.first, span.last)
                line_start = True
                if fold_to >= 0:
                    continue
            if index in deletions:
                text.append(DELETION_MARK, DELETION_STYLE)
            thinking = is_thinking(event)
            meta = Style(meta={"token": index}) + (dim if thinking else Style())
            shown = token_text(event, marked=marks.marked(index))
            if line_start:
                shown = shown.lstrip()
                line_start = not shown
            for run, extra in styled_runs(shown, marks.look(index, event.step.prob)):
                text.append(run, meta if extra is None else extra + meta)
            following = self.tokens[position + 1] if position + 1 < len(self.tokens) else None
            if thinking and following is not None and not is_thinking(following):
                text.append("\n")  # the answer starts on a line of its own
                line_start = True
        if upto is None and len(self.tokens) in deletions:
            text.append(DELETION_MARK, DELETION_STYLE)
        if upto is None and self.error:
            text.append(f"\n{display_text(self.error)}", NOTICE_STYLE)
        return text

    def _append_head(self, text: Text, first: int, last: int) -> int:
        """Append a thinking's summary line; returns `last` when it is folded, else -1."""
        folded = not self.thinking_open
        done = self.done or last + 1 < len(self.tokens)
        style = self.get_component_rich_style("column-text--thinking-head", partial=True)
        cursor = self.marks.cursor
        if folded and cursor is not None and first <= cursor <= last:
            style += CURSOR_STYLE
        if text.plain and not text.plain.endswith("\n"):
            text.append("\n")
        line = summary(last - first + 1, done=done, folded=folded)
        text.append(line, style + Style(meta={"thinking": first}))
        text.append("\n")
        return last if folded else -1

    def line_of(self, index: int, width: int) -> int:
        """The line (0-based) where token `index` ends, wrapped to `width` cells."""
        return max(0, len(self.text(upto=index + 1).wrap(self.app.console, width)) - 1)

    def render(self) -> Text:
        return self.text()

    def on_click(self, event: events.Click) -> None:
        """Say which token is under the mouse (a summary line: open or fold it)."""
        if "thinking" in event.style.meta:
            event.stop()
            self.set_thinking_open(not self.thinking_open)
            return
        index = event.style.meta.get("token")
        if isinstance(index, int):
            event.stop()
            self.post_message(self.Clicked(index))
