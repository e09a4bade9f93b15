"""The reply timeline: one column per token of a reply, drawn with Textual's `Sparkline`.

Rows: the chosen token's probability, the entropy, (on demand) the kept count and,
for a reply guided by a negative prompt or contrasted with a smaller model, how far
apart its two distributions were at each token (KL in nats: `step_divergence`), over
a marker row (the token cursor ▲, a setting changed ◆, the reply went back
from a rejected attempt ✗, a token the grammar forced ▪, a surprising token •: see
`sampling.analysis.surprise`; a repetition loop ↻ from its start, ~ along its copies;
the answer begins │ after a thinking model's thinking). A
reply longer than
the strip is compressed into buckets that keep each bucket's spike, the token a
reader looks for: the lowest chosen probability, the highest entropy, the most
kept tokens; a short one is spread over up to `MAX_SPREAD` cells a token. Clicking
a column picks that spike's token. Hidden until its key shows it (then with the kept
count, then hidden again).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Label, Sparkline

from backend.chat.events import TokenEvent
from sampling.analysis.loops import Loop
from sampling.analysis.surprise import DEFAULT_SURPRISE, SurpriseRule
from sampling.samplers.guidance_report import step_divergence
from tui.chat.branches import ghost_forks
from tui.chat.selection import ChatPanel, PanelHost, Selection
from tui.widgets.thinking_fold import is_thinking

LABEL_WIDTH = 3
MAX_SPREAD = 3
"""The most cells one token of a short reply takes."""
CURSOR_MARK = "▲"
CHANGE_MARK = "◆"
GHOST_MARK = "✗"
FORCED_MARK = "▪"
SURPRISE_MARK = "•"
LOOP_MARK = "↻"
LOOP_SPAN_MARK = "~"
ANSWER_MARK = "│"


def bucket_bounds(n_tokens: int, columns: int) -> npt.NDArray[np.intp]:
    """Where each column's tokens start, plus the end: one token per column if they fit."""
    count = min(n_tokens, max(columns, 1))
    return (np.arange(count + 1, dtype=np.intp) * n_tokens) // max(count, 1)


def spikes(
    values: npt.NDArray[np.float64], bounds: npt.NDArray[np.intp], lowest: bool
) -> list[int]:
    """Each bucket's spike: the index of its lowest (or highest) value, first one on ties."""
    picked: list[int] = []
    for start, end in itertools.pairwise(bounds):
        part = values[start:end]
        picked.append(int(start + (np.argmin(part) if lowest else np.argmax(part))))
    return picked


class _Series(Sparkline):
    """One row of the timeline; a click picks the token of the column's spike."""

    def __init__(self, id: str) -> None:
        super().__init__([], id=id)
        self.tokens: list[int] = []
        """The token each column stands for."""

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and 0 <= offset.x < len(self.tokens):
            event.stop()
            self.post_message(ReplyTimeline.TokenPicked(self.tokens[offset.x]))


class _Marks(Widget):
    """The marker row: the token cursor, the tokens where a setting changed, where the
    reply went back from a rejected attempt, and those the grammar forced (the only
    token it allowed)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "timeline--cursor",
        "timeline--change",
        "timeline--ghost",
        "timeline--forced",
        "timeline--surprise",
        "timeline--loop",
        "timeline--answer",
    }
    DEFAULT_CSS = """
    _Marks { height: 1; }
    _Marks > .timeline--cursor { color: $accent; text-style: bold; }
    _Marks > .timeline--change { color: $warning; }
    _Marks > .timeline--ghost { color: $error; text-style: dim; }
    _Marks > .timeline--forced { color: $secondary; }
    _Marks > .timeline--surprise { color: $error; text-style: bold; }
    _Marks > .timeline--loop { color: $warning; text-style: bold; }
    _Marks > .timeline--answer { color: $success; text-style: bold; }
    """

    def __init__(self) -> None:
        super().__init__(id="timeline-marks")
        self.cursor: int | None = None
        self.changes: list[int] = []
        self.ghosts: list[int] = []
        self.forced: list[int] = []
        self.surprises: list[int] = []
        self.loop: list[int] = []
        """The cells of a repetition loop, its start first."""
        self.answers: list[int] = []
        """The cells where an answer begins after a thinking."""
        self.tokens: list[int] = []

    def render(self) -> Text:
        marks = [" "] * len(self.tokens)
        for number, column in enumerate(self.loop):
            marks[column] = LOOP_SPAN_MARK if number else LOOP_MARK
        for column in self.surprises:
            marks[column] = SURPRISE_MARK
        for column in self.forced:
            marks[column] = FORCED_MARK
        for column in self.changes:
            marks[column] = CHANGE_MARK
        for column in self.ghosts:
            marks[column] = GHOST_MARK
        for column in self.answers:
            marks[column] = ANSWER_MARK
        if self.cursor is not None and self.cursor < len(marks):
            marks[self.cursor] = CURSOR_MARK
        styles = {
            CURSOR_MARK: self.get_component_rich_style("timeline--cursor"),
            CHANGE_MARK: self.get_component_rich_style("timeline--change"),
            GHOST_MARK: self.get_component_rich_style("timeline--ghost"),
            FORCED_MARK: self.get_component_rich_style("timeline--forced"),
            SURPRISE_MARK: self.get_component_rich_style("timeline--surprise"),
            LOOP_MARK: self.get_component_rich_style("timeline--loop"),
            LOOP_SPAN_MARK: self.get_component_rich_style("timeline--loop"),
            ANSWER_MARK: self.get_component_rich_style("timeline--answer"),
        }
        text = Text()
        for mark in marks:
            text.append(mark, styles.get(mark, styles[CHANGE_MARK]))
        return text

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and 0 <= offset.x < len(self.tokens):
            event.stop()
            self.post_message(ReplyTimeline.TokenPicked(self.tokens[offset.x]))


class ReplyTimeline(Vertical, ChatPanel):
    """A strip over the selected token's reply: probability, entropy, kept count, markers.

    `show` gives it the reply and the selected token; a click puts the token cursor
    on the column's token.
    """

    NAME = "timeline"
    COLUMN = "left"
    DEFAULT_CSS: ClassVar[str] = """
    ReplyTimeline {
        display: none;
        height: auto;
        border: round $primary-background-lighten-2;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    ReplyTimeline.-shown { display: block; }
    ReplyTimeline .timeline-row { height: 1; }
    ReplyTimeline .timeline-label { width: 3; color: $text-muted; }
    ReplyTimeline #timeline-kept-row { display: none; }
    ReplyTimeline.-kept #timeline-kept-row { display: block; }
    ReplyTimeline #timeline-divergence-row { display: none; }
    ReplyTimeline.-divergence #timeline-divergence-row { display: block; }
    ReplyTimeline #timeline-entropy > .sparkline--max-color { color: $warning; }
    ReplyTimeline #timeline-entropy > .sparkline--min-color { color: $warning 30%; }
    ReplyTimeline #timeline-kept > .sparkline--max-color { color: $success; }
    ReplyTimeline #timeline-kept > .sparkline--min-color { color: $success 30%; }
    ReplyTimeline #timeline-divergence > .sparkline--max-color { color: $accent; }
    ReplyTimeline #timeline-divergence > .sparkline--min-color { color: $accent 30%; }
    """

    class TokenPicked(Message):
        """A column of the timeline was clicked: select token `index` of its reply."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, host: PanelHost) -> None:
        super().__init__(id=self.NAME)
        self.host = host
        self.border_title = "timeline"
        self.reply_number: int | None = None
        """Which reply is shown (its number in the conversation), or None."""
        self._tokens: Sequence[TokenEvent] = ()
        self._shown_count = -1
        self._values = np.empty((4, 0), dtype=np.float64)
        """Per token read so far: chosen probability, entropy, kept count and the two
        distributions' divergence (0 where the step has none) (rows)."""
        self._diverged = False  # whether a token read has two distributions
        self._read = 0  # tokens of `_tokens` whose values are in `_values`
        self._changed: list[int] = []  # tokens read where a setting changed
        self._ghosts: tuple[int, ...] = ()  # tokens where the reply went back
        self._forced: list[int] = []  # tokens read that the grammar forced
        self._surprising: list[int] = []  # tokens read that the rule finds surprising
        self._answers: list[int] = []  # tokens read where an answer follows a thinking
        self._loop: Loop | None = None
        self._rule = DEFAULT_SURPRISE
        self._cursor: int | None = None
        self._width = 0
        self._columns: list[int] = []
        self._spread = 1
        self._prob = _Series("timeline-prob")
        self._entropy = _Series("timeline-entropy")
        self._kept = _Series("timeline-kept")
        self._divergence = _Series("timeline-divergence")
        self._marks = _Marks()

    def compose(self) -> ComposeResult:
        rows = (("p", self._prob), ("H", self._entropy), ("k", self._kept), ("D", self._divergence))
        for label, series in rows:
            with Horizontal(classes="timeline-row", id=f"{series.id}-row"):
                yield Label(label, classes="timeline-label")
                yield series
        with Horizontal(classes="timeline-row"):
            yield Label("", classes="timeline-label")
            yield self._marks

    @property
    def rows(self) -> int:
        """The rows shown: 0 (hidden), 2, or 3 with the kept count."""
        if not self.has_class("-shown"):
            return 0
        return 3 if self.has_class("-kept") else 2

    def toggle(self) -> None:
        """Show it, then add the kept count, then hide it."""
        rows = self.rows
        self.set_class(rows in (0, 2), "-shown")
        self.set_class(rows == 2, "-kept")
        self.redraw()

    def watch_selected(self, selection: Selection) -> None:
        if not self.rows:
            return
        reply = selection.reply
        self.show(
            selection.number,
            selection.tokens,
            selection.index if selection.cursor else None,
            ghost_forks(reply) if reply is not None else [],
            self.host.surprise,
            reply.loop if reply is not None else None,
        )

    @on(TokenPicked)
    def _on_token_picked(self, message: TokenPicked) -> None:
        message.stop()
        if self.reply_number is not None:
            self.host.select_token(self.reply_number, message.index)

    @property
    def columns(self) -> list[int]:
        """The first token of each column drawn (tests)."""
        return list(self._columns)

    @property
    def cursor(self) -> int | None:
        """The selected token's index in the shown reply, or None."""
        return self._cursor

    def column_of(self, index: int) -> int | None:
        """The column that token `index` is drawn in, or None."""
        if not self._columns or index < 0 or index >= len(self._tokens):
            return None
        return int(np.searchsorted(np.asarray(self._columns), index, side="right")) - 1

    def _xs_of(self, indices: Sequence[int]) -> list[int]:
        """The distinct x offsets of the tokens `indices` of the shown reply, in order
        (`x_of` for all of them in one search; those outside the reply are left out)."""
        wanted = np.asarray(indices, dtype=np.intp)
        wanted = wanted[(wanted >= 0) & (wanted < len(self._tokens))]
        if not wanted.size or not self._columns:
            return []
        columns = np.searchsorted(np.asarray(self._columns), wanted, side="right")
        return sorted({int(x) for x in (columns - 1) * self._spread})

    def _loop_xs(self, loop: Loop, count: int) -> list[int]:
        """The cells a loop's tokens take (up to the reply's end), its start first."""
        first = self.x_of(loop.start)
        if first is None:
            return []
        end = min(count, loop.end) - 1
        last = self.x_of(end) if end >= loop.start else first
        last = first if last is None else last + self._spread - 1
        return list(range(first, last + 1))

    def x_of(self, index: int) -> int | None:
        """The x offset (in the rows) of the first cell drawing token `index`, or None."""
        column = self.column_of(index)
        return None if column is None else column * self._spread

    @property
    def answers(self) -> list[int]:
        """The tokens of the shown reply where an answer begins after a thinking (tests)."""
        return list(self._answers)

    @property
    def surprising(self) -> list[int]:
        """The shown reply's surprising tokens (tests)."""
        return list(self._surprising)

    def show(
        self,
        number: int | None,
        tokens: Sequence[TokenEvent],
        cursor: int | None,
        ghosts: Sequence[int] = (),
        surprise: SurpriseRule = DEFAULT_SURPRISE,
        loop: Loop | None = None,
    ) -> None:
        """Draw reply `number`'s tokens with token `cursor` marked (None: no marker),
        the tokens where it went back from a rejected attempt (`ghosts`), the tokens
        `surprise` finds surprising and its repetition `loop` (None: none)."""
        same = number == self.reply_number and tokens is self._tokens and surprise == self._rule
        unchanged = same and tuple(ghosts) == self._ghosts and loop == self._loop
        self._loop = loop
        if unchanged and len(tokens) == self._shown_count and cursor == self._cursor:
            return
        self._ghosts = tuple(ghosts)
        if tokens is not self._tokens or len(tokens) < self._read or surprise != self._rule:
            self._read = 0  # another reply (or branch, or rule): read it afresh
            self._diverged = False
            self._changed = []
            self._forced = []
            self._surprising = []
            self._answers = []
        self._rule = surprise
        self.reply_number = number
        self._tokens = tokens
        self._cursor = cursor
        self._draw()

    def _read_new(self) -> None:
        """Take the values of the tokens that arrived since the last draw: a redraw
        while a reply streams reads each token once, not the whole reply again."""
        tokens, start = self._tokens, self._read
        count = len(tokens)
        if count > self._values.shape[1]:
            grown = np.empty((4, max(count, 2 * self._values.shape[1], 64)), dtype=np.float64)
            grown[:, :start] = self._values[:, :start]
            self._values = grown
        for index in range(start, count):
            step = tokens[index].step
            divergence = step_divergence(step.reports) if step.reports else None
            self._diverged = self._diverged or divergence is not None
            self._values[:, index] = (step.prob, step.entropy, step.n_kept, divergence or 0.0)
            if step.forced:
                self._forced.append(index)
            if self._rule.matches(step):
                self._surprising.append(index)
            if index > 0 and is_thinking(tokens[index - 1]) and not is_thinking(tokens[index]):
                self._answers.append(index)
            if index > 0:
                before = tokens[index - 1].step.settings
                if step.settings is not before and step.settings != before:
                    self._changed.append(index)
        self._read = count

    def on_resize(self, event: events.Resize) -> None:
        width = max(1, self.content_region.width - LABEL_WIDTH)
        if width != self._width:
            self._width = width
            self._draw()

    def _draw(self) -> None:
        tokens = self._tokens
        self._shown_count = len(tokens)
        count = len(tokens)
        bounds = bucket_bounds(count, self._width)
        self._columns = [int(b) for b in bounds[:-1]]
        spread = self._spread = max(1, min(MAX_SPREAD, self._width // max(count, 1)))
        self._read_new()
        probs, entropy, kept, divergence = self._values[:, :count]
        self.set_class(self._diverged, "-divergence")
        for series, values, lowest in (
            (self._prob, probs, True),
            (self._entropy, entropy, False),
            (self._kept, kept, False),
            (self._divergence, divergence, False),
        ):
            picked = [
                i for i in (spikes(values, bounds, lowest) if count else []) for _ in range(spread)
            ]
            series.tokens = picked
            series.data = [float(values[i]) for i in picked]
            series.styles.width = max(1, len(picked))
        marks = self._marks
        marks.tokens = [i for i in self._columns for _ in range(spread)]
        marks.styles.width = max(1, len(marks.tokens))
        marks.changes = self._xs_of(self._changed)
        marks.ghosts = self._xs_of(self._ghosts)
        marks.forced = self._xs_of(self._forced)
        marks.surprises = self._xs_of(self._surprising)
        marks.answers = self._xs_of(self._answers)
        loop = self._loop
        marks.loop = [] if loop is None else self._loop_xs(loop, count)
        marks.cursor = None if self._cursor is None else self.x_of(self._cursor)
        marks.refresh()
        self._update_title(probs, entropy, bounds, divergence if self._diverged else None)

    def _update_title(
        self,
        probs: npt.NDArray[np.float64],
        entropy: npt.NDArray[np.float64],
        bounds: npt.NDArray[np.intp],
        divergence: npt.NDArray[np.float64] | None,
    ) -> None:
        if self.reply_number is None or not len(probs):
            self.border_title = "timeline"
            return
        per = (
            ""
            if len(bounds) - 1 >= len(probs)
            else f" · ≤{-(-len(probs) // (len(bounds) - 1))} tokens/col"
        )
        marks = f" · {SURPRISE_MARK} {self._rule.text}" if self._surprising else ""
        marks += f" · {ANSWER_MARK} answer" if self._answers else ""
        apart = "" if divergence is None else f" · D ≤{divergence.max():.2f}"
        self.border_title = (
            f"timeline · reply {self.reply_number + 1} · p {probs.min():.2f}–{probs.max():.2f}"
            f" · H ≤{entropy.max():.1f}{apart}{per}{marks}"
        )
