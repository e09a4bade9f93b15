"""One column of the compare view: a reply under one setting, token by token.

The column owns no model and no thread: the compare screen feeds it events from its
handlers (`add_token`, `finish`, ...) and it redraws; its tokens are drawn by
`ColumnText` with the marks it passes down (divergence, the token diff against the
reference column, cursor). Its stats line gives its raw log-probability, so which
column is the more likely one is one glance.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from backend.chat.compare import first_divergence
from backend.chat.events import FinishedEvent, TokenEvent
from sampling.analysis.fork import NEAR_TIE_MARGIN, Fork, fork_at, fork_summary
from sampling.analysis.loops import Loop, first_loop
from tui.compare.column_text import NOTICE_STYLE, ColumnText
from tui.compare.columns import CompareColumn, settings_summary
from tui.compare.token_diff import LiveDiff, TokenDiff
from tui.score_label import logprob_label
from tui.widgets.status_line import LOOP_SIGN
from tui.widgets.thinking_fold import is_thinking
from tui.widgets.token_look import TokenMarks


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """What the stats line shows; computed from the column's tokens and finish."""

    n_tokens: int
    tokens_per_s: float | None
    mean_entropy: float | None
    reason: str | None
    loop: Loop | None = None
    """The first repetition loop that formed in the reply (`sampling.analysis.loops.first_loop`)."""


FORK_LEGEND = (
    "At the first token where this column parts from column 1:\n"
    "margin A/B: column 1's, then this column's, top-1 minus top-2 raw probability there"
    " (how sure each run was);\n"
    "Δlogit A/B: column 1's token's logit minus this column's token's logit, in each run's"
    " step (≥/≤: a token below the recorded table, a bound);\n"
    f"near-tie: both margins under {NEAR_TIE_MARGIN:g} (a coin flip could part them);"
    " disagreement: a margin of that or more.\n"
    "replaced / inserted / deleted: the token diff against column 1."
)
"""What the divergence line's words mean (its tooltip, and `?` in the compare view)."""


def join_parts(parts: list[str], width: int, separator: str = " · ") -> str:
    """Join `parts` on one line, breaking lines only between parts to fit `width`."""
    lines: list[str] = []
    line = ""
    for part in parts:
        candidate = part if not line else line + separator + part
        if line and width > 0 and len(candidate) > width:
            lines.append(line)
            line = part
        else:
            line = candidate
    lines.append(line)
    return "\n".join(lines)


class CompareColumnView(Vertical, can_focus=True):
    """A column: its settings, stats, divergence marker and the tokens.

    Args:
        index: The column's position (0 is the reference the others are compared to).
        column: Its label and settings.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "move(-1)", "Previous token", show=False),
        Binding("right", "move(1)", "Select token", key_display="←/→"),
        Binding("home", "move_to(0)", "First token", show=False),
        Binding("end", "move_to(-1)", "Last token", show=False),
        Binding("a", "alternatives", "Alternatives"),
    ]

    cursor: reactive[int | None] = reactive(None, init=False)
    """The selected token's index, or None."""

    class TokenSelected(Message):
        """The token cursor of a column moved."""

        def __init__(self, column: int, token: int) -> None:
            super().__init__()
            self.column = column
            self.token = token

    class AlternativesAsked(TokenSelected):
        """`a` on a selected token: its alternatives, to branch the column from there."""

    def __init__(self, index: int, column: CompareColumn, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.index = index
        self.column = column
        self.tokens: list[TokenEvent] = []
        self.finished: FinishedEvent | None = None
        self.loop: Loop | None = None
        """The first repetition loop that formed in the finished reply (None: none)."""
        self.divergence: int | None = None
        """First token index that differs from the reference column (None: none yet)."""
        self.phase = "waiting"
        self.prefill: tuple[int, int] | None = None
        self.notice: str | None = None
        self._decode_started: float | None = None
        self._dirty = False
        self._body = ColumnText()
        self.reference: CompareColumnView | None = None
        """The column this one is diffed against (None: it is the reference)."""
        self.live_diff = LiveDiff()
        """The token diff against the reference."""
        self._logprob_raw = 0.0  # sum of the tokens' raw log-probabilities
        self._raw_known = True  # every token recorded its raw probability
        self.has_thinking = False
        """Whether a token of its reply is thinking (a thinking model's)."""

    # --- layout -------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), classes="column-title", markup=False)
        yield Static("", classes="column-stats", markup=False)
        marker = Static("", classes="column-marker", markup=False)
        marker.tooltip = FORK_LEGEND
        yield marker
        with VerticalScroll(classes="column-body", can_focus=False):
            yield self._body

    def on_mount(self) -> None:
        self._update_lines()

    def _title_text(self) -> Text:
        title = Text(f"{self.index + 1} ", style="bold")
        title.append(self.column.label, style="bold")
        summary = settings_summary(self.column.settings)
        label_words = set(self.column.label.split())
        if not set(summary.split()) <= label_words:  # say what the label does not
            title.append(f"  {summary}", style="dim")
        settings = self.column.settings
        if settings.order == settings.registry.default_order and not settings.greedy:
            # The summary leaves this order unnamed; the chat's runs the temperature last.
            title.append("  t-first", style="bold #e5c07b")
        return title

    # --- state changes (called from the screen's handlers) --------------------------

    def reset(self, column: CompareColumn) -> None:
        """Forget the tokens and start over (a re-run), maybe with new settings."""
        self.column = column
        self.tokens = []
        self.has_thinking = False
        self.finished = None
        self.loop = None
        self.divergence = None
        self.live_diff.reset()
        self._logprob_raw = 0.0
        self._raw_known = True
        self.phase = "waiting"
        self.prefill = None
        self.notice = None
        self._decode_started = None
        self.set_reactive(CompareColumnView.cursor, None)
        self.query_one(".column-title", Static).update(self._title_text())
        self._refresh_all()

    def set_phase(self, phase: str) -> None:
        """The generation of this column entered `phase` ("prefill", "decode", ...)."""
        self.phase = phase
        if phase == "decode" and self._decode_started is None:
            self._decode_started = time.monotonic()
        self._update_lines()

    def set_prefill(self, done: int, total: int) -> None:
        """Prefill progress of this column."""
        self.prefill = (done, total)
        self._update_lines()

    def add_token(self, event: TokenEvent) -> None:
        """Append a sampled token (drawn at the next `flush`: redraws are coalesced)."""
        self.tokens.append(event)
        self.has_thinking = self.has_thinking or is_thinking(event)
        raw = event.step.prob_unfiltered
        if raw is None:
            self._raw_known = False
        else:
            self._logprob_raw += math.log(raw) if raw > 0.0 else -math.inf
        self._dirty = True

    def flush(self) -> None:
        """Redraw if tokens arrived here, or in the reference, since the last redraw."""
        if self._dirty or self._diff_due():
            self._refresh_all()

    def set_thinking_open(self, shown: bool) -> None:
        """Show its thinking, or fold it under its summary line."""
        self._body.set_thinking_open(shown)

    @property
    def thinking_open(self) -> bool:
        """Whether its thinking is shown."""
        return self._body.thinking_open

    @property
    def diff(self) -> TokenDiff | None:
        """The token diff against the reference, as last drawn (None: the reference)."""
        return self.live_diff.diff if self.reference is not None else None

    @property
    def logprob_raw(self) -> float | None:
        """The sum of the tokens' raw log-probabilities (nats; None when a token does
        not record its raw probability)."""
        return self._logprob_raw if self._raw_known else None

    def set_notice(self, message: str) -> None:
        """Show a backend notice on the marker line."""
        self.notice = message
        self._update_lines()

    def finish(self, event: FinishedEvent) -> None:
        """The generation of this column ended."""
        self.finished = event
        self.loop = first_loop(event.token_ids)
        self.phase = "done"
        self._refresh_all()

    def set_divergence(self, divergence: int | None) -> None:
        """Mark the first token that differs from the reference column."""
        if divergence != self.divergence:
            self.divergence = divergence
            self._refresh_all()

    @property
    def token_ids(self) -> tuple[int, ...]:
        """The ids of the tokens received so far."""
        return tuple(event.step.token_id for event in self.tokens)

    @property
    def text(self) -> str:
        """The reply text received so far (the finished text once done)."""
        if self.finished is not None:
            return self.finished.text
        return "".join(event.text for event in self.tokens)

    def stats(self) -> ColumnStats:
        """Token count, tokens/s, mean entropy (nats) and finish reason."""
        n = len(self.tokens)
        mean_entropy = sum(e.step.entropy for e in self.tokens) / n if n else None
        tps: float | None = None
        if self.finished is not None:
            tps = self.finished.stats.decode_tps
        elif self._decode_started is not None and n:
            elapsed = time.monotonic() - self._decode_started
            tps = n / elapsed if elapsed > 0 else None
        reason = self.finished.reason if self.finished is not None else None
        return ColumnStats(n, tps, mean_entropy, reason, self.loop)

    # --- token cursor ---------------------------------------------------------------

    def select(self, index: int) -> None:
        """Put the token cursor on token `index` (clamped to the tokens there are)."""
        if not self.tokens:
            return
        index = max(0, min(index, len(self.tokens) - 1))
        if index == self.cursor:
            # Selected again (e.g. after another column's): show it again.
            self.post_message(self.TokenSelected(self.index, index))
        else:
            self.cursor = index

    def action_move(self, delta: int) -> None:
        """Move the token cursor by `delta` tokens (starting from the divergence)."""
        if not self.tokens:
            return
        if self.cursor is None:
            start = self.divergence if self.divergence is not None else 0
            self.select(start if delta > 0 else (self.divergence or len(self.tokens) - 1))
        else:
            self.select(self.cursor + delta)

    def action_move_to(self, index: int) -> None:
        """Put the cursor on the first (0) or last (-1) token."""
        if self.tokens:
            self.select(index if index >= 0 else len(self.tokens) + index)

    def action_alternatives(self) -> None:
        """Ask for the selected token's alternatives (the screen shows them)."""
        if self.cursor is None or self.cursor >= len(self.tokens):
            self.notify("Select a token first (← →).")
            return
        self.post_message(self.AlternativesAsked(self.index, self.cursor))

    def on_focus(self) -> None:
        """Show this column's selected token again when the column gets the focus."""
        if self.cursor is not None and self.cursor < len(self.tokens):
            self.post_message(self.TokenSelected(self.index, self.cursor))

    def watch_cursor(self, cursor: int | None) -> None:
        if cursor is not None and self._body.folded_at(cursor):
            self._body.set_thinking_open(True)  # the cursor went into a thinking
        self._refresh_body()
        if cursor is not None:
            self._scroll_to_cursor(cursor)
            self.post_message(self.TokenSelected(self.index, cursor))

    @on(ColumnText.Clicked)
    def _on_text_clicked(self, message: ColumnText.Clicked) -> None:
        message.stop()
        self.focus()
        self.select(message.index)

    def _scroll_to_cursor(self, cursor: int) -> None:
        body = self.query_one(".column-body", VerticalScroll)
        width = max(1, body.scrollable_content_region.width)
        line = self._body.line_of(cursor, width)
        body.scroll_to(y=max(0, line - body.scrollable_content_region.height // 2), animate=False)

    # --- rendering ------------------------------------------------------------------

    def _stats_text(self) -> Text:
        stats = self.stats()
        parts: list[str] = [f"{stats.n_tokens} tok"]
        if stats.tokens_per_s is not None:
            tps = stats.tokens_per_s
            parts.append(f"{tps:.0f} tok/s" if tps >= 100 else f"{tps:.1f} tok/s")
        if stats.n_tokens and self.logprob_raw is not None:
            parts.append(logprob_label(self.logprob_raw, stats.n_tokens))
        if stats.mean_entropy is not None:
            parts.append(f"mean H {stats.mean_entropy:.2f} nats")
        if stats.reason is not None:
            parts.append(stats.reason)
            if stats.loop is not None:
                parts.append(f"{LOOP_SIGN} loop {stats.loop.period}×{stats.loop.count}")
        elif self.phase == "prefill" and self.prefill is not None:
            parts.append(f"prefill {self.prefill[0]}/{self.prefill[1]}")
        elif self.phase == "decode":
            parts.append("decoding…")
        else:
            parts.append(self.phase)
        width = self.query_one(".column-stats", Static).size.width
        return Text(join_parts(parts, width))

    def _marker_text(self) -> Text:
        if self.notice is not None:
            return Text(self.notice, NOTICE_STYLE)
        if self.index == 0:
            return Text("reference column", style="dim")
        if self.divergence is not None:
            parts = [f"◆ diverges at token {self.divergence + 1}"]
            fork = self.fork()
            if fork is not None:
                parts += fork_summary(fork).split(" · ")
            if self.diff is not None and not self.diff.same:
                parts += self.diff.summary().split(" · ")
            width = self.query_one(".column-marker", Static).size.width
            return Text(join_parts(parts, width), style="bold #e5c07b")
        if self.finished is not None:
            return Text("= same tokens as column 1", style="dim")
        return Text("")

    def fork(self) -> Fork | None:
        """Where this column parts from the reference and how sure each was there
        (None: it has not parted, or it is the reference)."""
        reference, index = self.reference, self.divergence
        if reference is None or index is None:
            return None
        sides = (reference.tokens, self.tokens)
        chosen = tuple(s[index].step.token_id if index < len(s) else None for s in sides)
        steps = tuple(s[index].step if index < len(s) else None for s in sides)
        return fork_at(index, (chosen[0], chosen[1]), (steps[0], steps[1]), NEAR_TIE_MARGIN)

    def on_resize(self) -> None:
        self._update_lines()

    def _update_lines(self) -> None:
        if not self.is_mounted:
            return
        self.query_one(".column-stats", Static).update(self._stats_text())
        self.query_one(".column-marker", Static).update(self._marker_text())

    def _refresh_body(self) -> None:
        if self.is_mounted:
            # The reference column (0) is what the others diverge from: no mark of its own.
            divergence = self.divergence if self.index > 0 else None
            self._update_diff()
            diff = self.diff
            changes = None if diff is None else diff.changes
            marks = TokenMarks(cursor=self.cursor, divergence=divergence, changes=changes)
            error = self.finished.error if self.finished is not None else None
            deletions = {} if diff is None else diff.deleted_before
            done = self.finished is not None
            self._body.show(self.tokens, marks, error or "", deletions, done)

    def _diff_due(self) -> bool:
        reference = self.reference
        if reference is None:
            return False
        ended = self.finished is not None and reference.finished is not None
        return self.live_diff.due(len(reference.tokens), len(self.tokens), ended)

    def _update_diff(self) -> None:
        reference = self.reference
        if reference is not None and self._diff_due():
            ended = self.finished is not None and reference.finished is not None
            self.live_diff.update(reference.token_ids, self.token_ids, ended)

    def _refresh_all(self) -> None:
        self._dirty = False
        self._update_diff()  # the marker line states it
        self._update_lines()
        self._refresh_body()


def divergence_between(reference: CompareColumnView, view: CompareColumnView) -> int | None:
    """The first token index where `view` departs from `reference`, once it is known.

    While one of the two is still generating, a column that so far matches the other
    has not diverged yet; when the shorter one ended, the divergence is its length.
    """
    ref_ids, ids = reference.token_ids, view.token_ids
    index = first_divergence(ref_ids, ids)
    if index is None:
        return None
    if index < min(len(ref_ids), len(ids)):
        return index
    shorter = reference if len(ref_ids) <= len(ids) else view
    return index if shorter.finished is not None else None
