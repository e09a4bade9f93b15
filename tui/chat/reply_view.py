"""One assistant reply in the transcript, token by token.

The reply is laid out by hand (word wrap over token pieces) and drawn line by line
with Textual's line API: while tokens stream in, only the last line is redrawn, so
the cost of a frame does not grow with the length of the reply. Owning the layout
also maps a mouse click to the token under it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from sampling.analysis.reply_score import reply_score
from sampling.sections import SectionSpan
from tui.chat.branches import fork_counts
from tui.chat.reply import FINISH_LABELS, GHOST_LABEL, Reply
from tui.chat.word_wrap import NO_TOKEN, WrappedLines
from tui.display import display_text
from tui.score_label import score_label
from tui.widgets.thinking_fold import is_thinking, summary
from tui.widgets.token_look import CURSOR_STYLE, PLAIN, TokenMarks, styled_runs
from tui.widgets.token_text import token_text

_NOTE = Style(italic=True, color="grey50")
_ERROR = Style(bold=True, color="red")
_FORK = Style(bold=True, color="magenta")
_GHOST = Style(dim=True, strike=True, color="grey50")
"""A ghost's own tokens: the attempt a phrase ban rejected, greyed."""
FORK_MARK = "⋔"
"""Drawn after a token where branches of the reply part, with their number."""
_HEAD = -2
"""A thinking's summary line is run index `_HEAD - first`, `first` its first token."""
GROW = 16
"""Lines a streaming reply first reserves; each time they fill, the reserve doubles."""
GUTTER = 2  # "▌ " before each line


class ReplyView(Widget):
    """Draws a `Reply`: its tokens with their marks (`TokenMarks`: tint, cursor).

    Each run of thinking (`tui.widgets.thinking_fold`) is folded under its summary
    line while `thinking_open` is False (a click on the line opens or folds it),
    else shown dimmed under it.
    """

    DEFAULT_CSS = """
    ReplyView { height: auto; }
    ReplyView > .reply--gutter { color: $success; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "reply--gutter",
        "reply--thinking",
        "reply--thinking-head",
    }

    class TokenClicked(Message):
        """A token of this reply was clicked."""

        def __init__(self, view: ReplyView, index: int) -> None:
            super().__init__()
            self.view = view
            self.index = index

    def __init__(self, reply: Reply, number: int) -> None:
        super().__init__(classes="reply")
        self.reply = reply
        self.number = number
        self.marks = TokenMarks()
        self._wrapped = WrappedLines()  # the lines laid out, at the width laid out for
        self._laid_out = 0  # tokens laid out
        self._shown = len(reply.tokens)
        """Tokens to show: while the reply streams, those there at the last `sync` (the
        chat's redraw budget decides when text is drawn, not the view's first layout)."""
        self._finished_shown = ""
        self._placeholder = False
        self._strips: dict[int, Strip] = {}
        self._forks: dict[int, int] = {}  # token index -> branches going on from there
        self._score: tuple[Reply | None, int, str] = (None, 0, "")  # reply, tokens, label
        self.thinking_open = False
        """Whether its thinking is shown (else folded under its summary line)."""
        self._folds: dict[int, SectionSpan] = {}  # folded spans laid out, by first token
        self._break = False  # the next token starts a line (after a thinking)
        self._scanned = (0, False)  # tokens looked at for a thinking, and whether found

    # -- state -----------------------------------------------------------------

    @property
    def selected(self) -> int | None:
        """The selected token's index, or None."""
        return self.marks.cursor

    def set_marks(self, marks: TokenMarks) -> None:
        """Change the tinting or the selected token."""
        if marks != self.marks:
            self.marks = marks
            self._relayout()  # a selected blank token shows its piece: the layout changes

    def set_thinking_open(self, shown: bool) -> None:
        """Show its thinking, or fold it under its summary line."""
        if shown != self.thinking_open:
            self.thinking_open = shown
            self._relayout()

    @property
    def has_thinking(self) -> bool:
        """Whether the reply shown has a thinking (each token looked at once)."""
        count, found = self._scanned
        tokens = self.reply.tokens
        if count > len(tokens):
            count, found = 0, False  # another branch, or the reply went back
        found = found or any(is_thinking(token) for token in tokens[count:])
        self._scanned = (len(tokens), found)
        return found

    def folded_at(self, index: int) -> bool:
        """Whether token `index` is in a folded thinking."""
        tokens = self.reply.tokens
        return not self.thinking_open and 0 <= index < len(tokens) and is_thinking(tokens[index])

    def show(self, reply: Reply) -> None:
        """Draw another branch of the reply's turn instead."""
        self.reply = reply
        self._shown = len(reply.tokens)
        self._relayout()

    def sync(self) -> bool:
        """Lay out the tokens that arrived since the last call and redraw what changed.

        Returns:
            Whether anything changed (False: no new token and the same end, nothing
            redrawn).
        """
        self._shown = len(self.reply.tokens)
        if self._wrapped.width <= 0:
            self.refresh(layout=True)  # not sized yet: laid out on the first resize
            return True
        tokens = self.reply.tokens
        if self._laid_out == len(tokens) and self.reply.finished == self._finished_shown:
            return False  # nothing new
        if self._laid_out > len(tokens):
            self._relayout()  # the reply went back (a phrase ban)
            return True
        if self._thinking_changes(len(tokens)):  # a thinking's summary line changed
            self._relayout(refresh=False)
            self._refresh_lines(0)
            return True
        if self._placeholder:  # the "…" placeholder goes
            self._relayout(refresh=False)
            self._refresh_lines(0)
            return True
        first_dirty = len(self._wrapped.lines) - 1
        self._place_tokens(self._laid_out, len(tokens))
        self._laid_out = len(tokens)
        if self.reply.finished != self._finished_shown:
            self._place_finish()  # the end marks follow the last token
        for y in range(first_dirty, len(self._wrapped.lines)):
            self._strips.pop(y, None)
        self._refresh_lines(first_dirty)
        return True

    def _thinking_changes(self, count: int) -> bool:
        """Whether tokens up to `count` change a thinking's summary line (laid out
        again): a folded thinking grew, a thinking ended, or the reply ended in one."""
        tokens = self.reply.tokens
        start = self._laid_out
        before = start > 0 and is_thinking(tokens[start - 1])
        if before and self.reply.finished != self._finished_shown:
            return True
        for index in range(start, count):
            thinking = is_thinking(tokens[index])
            if (thinking and not self.thinking_open) or (before and not thinking):
                return True
            before = thinking
        return False

    def _refresh_lines(self, first: int) -> None:
        """Redraw from line `first` on: a layout only when the height changes."""
        if self._height() != self.size.height:
            self.refresh(layout=True)
        else:
            self.refresh(Region(0, first, self.size.width, len(self._wrapped.lines) - first))

    def line_of(self, index: int) -> int:
        """The line token `index` starts on (a folded one: its thinking's summary line;
        the last line if it is not laid out)."""
        runs = {
            index,
            *(
                _HEAD - span.first
                for span in self._folds.values()
                if span.first <= index <= span.last
            ),
        }
        for y, line in enumerate(self._wrapped.lines):
            if any(run[1] in runs for run in line):
                return y
        return len(self._wrapped.lines) - 1

    def plain_text(self) -> str:
        """What is shown, as plain text (tests)."""
        return "\n".join("".join(run[0] for run in line) for line in self._wrapped.lines)

    # -- layout ----------------------------------------------------------------

    def _relayout(self, refresh: bool = True) -> None:
        self._wrapped.clear()
        self._laid_out = 0
        self._strips.clear()
        self._folds.clear()
        self._break = False
        self._scanned = (0, False)
        self._forks = fork_counts(self.reply)
        if self.reply.finished:
            self._shown = len(self.reply.tokens)  # its end marks follow the last token
        if self._wrapped.width > 0:
            self._place_tokens(0, self._shown)
            self._laid_out = self._shown
            self._place_finish()
        if refresh:
            self.refresh(layout=True)

    def _place_finish(self) -> None:
        reply = self.reply
        if self._break:
            self._wrapped.drop_empty_line()  # a folded thinking's line ends the reply
        self._break = False
        self._finished_shown = reply.finished
        self._placeholder = not self._shown and not reply.finished
        if self._placeholder:
            self._wrapped.place("…", NO_TOKEN, _NOTE)
        label = GHOST_LABEL if reply.is_ghost else FINISH_LABELS.get(reply.finished)
        if label:
            self._wrapped.place(f"  [{label}]", NO_TOKEN, _NOTE)
        score = self._score_text() if reply.finished and reply.tokens else ""
        if score:
            self._wrapped.place_unbroken(score, _NOTE)
        if reply.error:
            self._wrapped.newline()
            self._wrapped.place(display_text(reply.error), NO_TOKEN, _ERROR)

    def _score_text(self) -> str:
        """The finished reply's score label, computed once per branch shown."""
        reply, count, label = self._score
        if reply is not self.reply or count != len(self.reply.tokens):
            label = score_label(reply_score([token.step for token in self.reply.tokens]))
            self._score = (self.reply, len(self.reply.tokens), label)
        return label

    def _place_tokens(self, start: int, stop: int) -> None:
        """Lay out tokens `start` to `stop` (those there): a thinking starting among
        them gets its summary line, and folded, nothing more."""
        tokens = self.reply.tokens
        index = start
        while index < stop:
            thinking = is_thinking(tokens[index])
            if thinking and (index == 0 or not is_thinking(tokens[index - 1])):
                last = index
                while last + 1 < stop and is_thinking(tokens[last + 1]):
                    last += 1
                if self._place_head(SectionSpan(tokens[index].step.section, index, last), stop):
                    index = last + 1
                    continue
            self._place_token(index)
            if thinking and index + 1 < stop and not is_thinking(tokens[index + 1]):
                self._break = True  # the answer starts on a line of its own
            index += 1

    def _place_head(self, span: SectionSpan, stop: int) -> bool:
        """Place a thinking's summary line on a line of its own; True when it folds."""
        folded = not self.thinking_open
        done = span.last + 1 < stop or bool(self.reply.finished)
        if self._wrapped.line_width:
            self._wrapped.newline()
        self._wrapped.place(
            summary(span.length, done=done, folded=folded), _HEAD - span.first, None
        )
        self._wrapped.newline()
        if folded:
            self._folds[span.first] = span
        self._break = True  # what follows starts the next line, its spaces left out
        return folded

    def _place_token(self, index: int) -> None:
        token = self.reply.tokens[index]
        reply = self.reply
        ghostly = reply.is_ghost and index >= (reply.fork_at or 0)
        text = token_text(token, marked=self.marks.marked(index))
        if self._break:  # the first token after a thinking: on a line of its own
            text = text.lstrip(" \t")
            if not text.strip("\n"):
                return  # blank lines between the thinking and the answer: left out
            self._break = False
            if self._wrapped.line_width:
                self._wrapped.newline()
            text = text.lstrip()
        self._wrapped.place(text, index, _GHOST if ghostly else None)
        forks = self._forks.get(index)
        if forks:
            self._wrapped.place(f"{FORK_MARK}{forks}", NO_TOKEN, _FORK)

    # -- drawing ---------------------------------------------------------------

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if width - GUTTER != self._wrapped.width:
            self._wrapped.width = width - GUTTER
            self._relayout(refresh=False)
        return self._height()

    def _height(self) -> int:
        # While tokens stream in, the height grows in steps: a layout pass redraws the
        # whole screen (three passes, as the transcript's size follows), so the room
        # reserved doubles each time it fills: a few layouts a reply, however long.
        # The transcript follows the last line drawn (`text_height`), not the room.
        lines = len(self._wrapped.lines)
        if self.reply.finished:
            return lines
        room = GROW
        while room < lines:
            room *= 2
        return room

    @property
    def text_height(self) -> int:
        """Lines drawn (the height less the room reserved while the reply streams)."""
        return len(self._wrapped.lines)

    def on_resize(self, event: events.Resize) -> None:
        if self.content_region.width - GUTTER != self._wrapped.width:
            self._wrapped.width = self.content_region.width - GUTTER
            self._relayout()

    def render_line(self, y: int) -> Strip:
        strip = self._strips.get(y)
        if strip is None:
            strip = self._render_line(y)
            self._strips[y] = strip
        return strip

    def _render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y >= len(self._wrapped.lines):
            return Strip.blank(width, base)  # room reserved while streaming: no gutter
        tokens = self.reply.tokens
        # The gutter is drawn here rather than as a CSS border, so that it stops at
        # the last line of text and not at the bottom of the reserved room.
        segments = [Segment("▌ ", self.get_component_rich_style("reply--gutter"))]
        thinking = base + self.get_component_rich_style("reply--thinking")
        for text, index, style in self._wrapped.lines[y]:
            if index <= _HEAD:
                segments.append(Segment(text, self._head_style(_HEAD - index)))
                continue
            if index < 0:
                segments.append(Segment(text, base if style is None else base + style))
                continue
            step = tokens[index].step if index < len(tokens) else None
            rank = step.rank_known if step is not None and self.marks.by_rank else None
            look = PLAIN if step is None else self.marks.look(index, step.prob, rank)
            plain = thinking if step is not None and is_thinking(tokens[index]) else base
            for run, extra in styled_runs(text, look):
                segments.append(Segment(run, plain if extra is None else plain + extra))
        strip = Strip(segments).simplify()  # one segment per run of one style
        return strip.extend_cell_length(width, base).crop(0, width)

    def _head_style(self, first: int) -> Style:
        """A summary line's style: the cursor's when it is in that folded thinking."""
        style = self.rich_style + self.get_component_rich_style("reply--thinking-head")
        span = self._folds.get(first)
        cursor = self.marks.cursor
        if span is not None and cursor is not None and span.first <= cursor <= span.last:
            style += CURSOR_STYLE
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()

    # -- mouse -----------------------------------------------------------------

    def token_at(self, x: int, y: int) -> int | None:
        """The token index drawn at content offset (x, y), if any."""
        run = self._run_at(x, y)
        return run if run is not None and run >= 0 else None

    def _run_at(self, x: int, y: int) -> int | None:
        """The run index drawn at content offset (x, y) (a token's, a summary line's,
        `NO_TOKEN`), or None."""
        if not 0 <= y < len(self._wrapped.lines):
            return None
        position = GUTTER
        for text, index, _ in self._wrapped.lines[y]:
            position += cell_len(text)
            if x < position:
                return index
        return None

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        run = self._run_at(offset.x, offset.y)
        if run is not None and run <= _HEAD:  # a thinking's summary line: open or fold
            event.stop()
            self.set_thinking_open(not self.thinking_open)
            return
        index = self.token_at(offset.x, offset.y)
        if index is not None:
            event.stop()
            self.post_message(self.TokenClicked(self, index))
