"""The transcript: user turns and assistant replies, with a token cursor."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from rich.text import Text
from textual import on
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.message import Message
from textual.widgets import Static

from backend.store.store import ChatRecord
from sampling.analysis.surprise import DEFAULT_SURPRISE, SurpriseRule, next_rule, parse_surprise
from sampling.errors import SettingsError
from tui.chat.branches import branch_label
from tui.chat.reply import FINISH_LABELS, Reply
from tui.chat.reply_view import ReplyView
from tui.chat.surprise_nav import surprising_after
from tui.display import display_text
from tui.widgets.entry import ValueEntryScreen, covered
from tui.widgets.token_look import TokenMarks

_TOKEN = Binding.Group("token", compact=True)
_BRANCH = Binding.Group("branch", compact=True)
_SURPRISE = Binding.Group("surprise", compact=True)
_W = TypeVar("_W", Static, ReplyView)
FOLLOW_JUMP = 3
"""A streaming reply is followed in jumps of 1/FOLLOW_JUMP of the view's height."""


class Transcript(VerticalScroll, can_focus=True):
    """The conversation. Focused, it is in token-cursor mode: ←/→ pick a past token.

    It owns the reply views, the token cursor, the colouring (by probability or by
    rank bucket) and the rule for surprising tokens (`[`/`]` jump between them);
    selecting a token posts `TokenSelected` (the app shows that step).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "move_token(-1)", "token", key_display="←", group=_TOKEN),
        Binding("right", "move_token(1)", "token", key_display="→", group=_TOKEN),
        Binding("home", "move_token(-1000000)", "first", show=False),
        Binding("end", "move_token(1000000)", "last", show=False),
        Binding("enter", "alternatives", "alts", key_display="⏎"),
        Binding("w", "screen.whatif", "what if"),
        Binding("x", "screen.explore", "explore"),
        # The reply's other branches (swipes); ctrl+←/→ where the terminal sends them.
        Binding("less_than_sign,ctrl+left", "branch(-1)", "branch", group=_BRANCH),
        Binding("greater_than_sign,ctrl+right", "branch(1)", "branch", group=_BRANCH),
        Binding("u,ctrl+up", "parent_branch", "parent"),
        Binding(
            "left_square_bracket", "surprise(-1)", "surprise", key_display="[", group=_SURPRISE
        ),
        Binding(
            "right_square_bracket", "surprise(1)", "surprise", key_display="]", group=_SURPRISE
        ),
        Binding("s", "surprise_rule", "threshold"),
        Binding("S", "type_surprise_rule", "type threshold", show=False),
        Binding("g", "colour_by_rank", "rank colour"),
    ]

    class TokenSelected(Message):
        """The token cursor moved (`cursor` is (reply, token) or None when cleared)."""

        def __init__(self, cursor: tuple[int, int] | None) -> None:
            super().__init__()
            self.cursor = cursor

    class SurpriseChanged(Message):
        """The rule for surprising tokens changed (the timeline redraws its marks)."""

    class AlternativesAsked(Message):
        """Enter on a selected token: show its alternatives (`cursor` is (reply, token))."""

        def __init__(self, cursor: tuple[int, int]) -> None:
            super().__init__()
            self.cursor = cursor

    class BranchAsked(Message):
        """Show another branch of the reply: `delta` siblings on, or the parent (None)."""

        def __init__(self, delta: int | None) -> None:
            super().__init__()
            self.delta = delta

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.views: list[ReplyView] = []
        self._followed_to: float | None = None  # where following a streaming reply jumped
        self.cursor: tuple[int, int] | None = None
        self.colour = False
        self.by_rank = False
        self.surprise = DEFAULT_SURPRISE
        self.thinking_shown = False
        """Whether the replies' thinking is shown (else folded; the cursor opens one)."""
        self._redone_open = False  # the thinking of the reply being redone was open

    # -- content -------------------------------------------------------------

    def add_user(self, text: str) -> Static:
        """Append a user turn (shown literally)."""
        return self._append(Static(Text(display_text(text)), classes="user"))

    def add_reply(self, reply: Reply) -> ReplyView:
        """Append an assistant reply's view."""
        view = ReplyView(reply, len(self.views))
        self._followed_to = None
        view.set_marks(TokenMarks(colour=self.colour, by_rank=self.by_rank))
        view.thinking_open = self.thinking_shown or self._redone_open
        self._redone_open = False
        self.views.append(view)
        self._label_branch()
        return self._append(view)

    def _label_branch(self) -> None:
        """Say under the transcript which branch of the last reply is shown, if it has several."""
        reply = self.views[-1].reply if self.views else None
        several = reply is not None and len(reply.tree) > 1
        self.border_subtitle = f"last reply: {branch_label(reply)}" if reply and several else ""

    def add_stored_reply(self, text: str, finish_reason: str = "") -> Static:
        """Append a reply of a saved chat, as plain text (it has no token records)."""
        shown = Text(display_text(text))
        label = FINISH_LABELS.get(finish_reason, finish_reason if finish_reason != "eos" else "")
        if label:
            shown.append(f" [{label}]", style="italic grey50")
        return self._append(Static(shown, classes="stored"))

    def show_record(
        self, record: ChatRecord, shown: dict[int, Reply], cursor: tuple[int, int] | None = None
    ) -> None:
        """Show a saved chat instead: its replies in `shown` (by message id) token by
        token, the others as plain text; select token `cursor` (reply, token) if given."""
        self.clear()
        for message in record.messages:
            if message.role == "user":
                self.add_user(message.content)
            elif message.id in shown:
                self.add_reply(shown[message.id])
            elif message.role == "assistant":
                reason = message.reply.finish_reason if message.reply else ""
                self.add_stored_reply(message.content, reason)
            else:
                self.add_note(f"{message.role}: {message.content}")
        if cursor is not None and cursor[0] < len(self.views):
            tokens = self.views[cursor[0]].reply.tokens
            if tokens:
                self.select(cursor[0], min(cursor[1], len(tokens) - 1))

    def show_branch(self, branch: Reply, at: int | None = None) -> ReplyView:
        """Draw another branch as the last reply; select its token `at` if given."""
        self.clear_cursor()
        view = self.views[-1]
        view.show(branch)
        self._label_branch()
        if at is not None and branch.tokens:
            self.select(len(self.views) - 1, min(at, len(branch.tokens) - 1))
        return view

    def remove_replies_from(self, turn: int) -> None:
        """Remove the view of the reply of conversation turn `turn` (it is about to be
        redone) and everything shown after it."""
        cut = next((n for n, view in enumerate(self.views) if view.reply.turn >= turn), None)
        if cut is None:
            return
        self.clear_cursor()
        self._redone_open = self.views[cut].thinking_open  # its new branch keeps it open
        children = list(self.children)
        self.remove_children(children[children.index(self.views[cut]) :])
        del self.views[cut:]
        self._label_branch()

    def add_note(self, text: str, *, error: bool = False) -> Static:
        """Append a notice or an error line (above a reply still streaming: its
        notices come before its text, which the view follows)."""
        note = Static(Text(display_text(text)), classes="error" if error else "note")
        return self._append(note, before=self._streaming())

    def clear(self) -> None:
        """Remove everything (a new chat)."""
        self.views.clear()
        self._label_branch()
        self.cursor = None
        self.remove_children()
        self.scroll_home(animate=False, immediate=True)

    def _append(self, widget: _W, before: ReplyView | None = None) -> _W:
        was_at_end = self.at_end
        self.mount(widget, before=before)
        self.follow(was_at_end)
        return widget

    # -- following the tail ----------------------------------------------------

    @property
    def at_end(self) -> bool:
        """Whether the view shows the last line drawn (then it follows new content).

        While a reply has room reserved, the view follows it in jumps
        (`_scroll_to_end`): it is at the end where the last jump left it, or below."""
        followed = self._followed_to if self._with_room() is not None else None
        end = self._tail_y() if followed is None else min(followed, self._tail_y())
        return self.scroll_y >= end - 1

    def follow(self, was_at_end: bool = True) -> None:
        """Scroll to the bottom once laid out, if the view was there before.

        (Textual's `anchor()` scrolls a short transcript to a negative offset in
        textual 8.2.8, so the transcript follows its tail by hand.)
        """
        if was_at_end:
            self.call_after_refresh(self._scroll_to_end, self.scroll_y)

    def _streaming(self) -> ReplyView | None:
        """The last reply's view while it streams."""
        last = self._last_view()
        return last if last is not None and not last.reply.finished else None

    def _last_view(self) -> ReplyView | None:
        return self.views[-1] if self.views else None

    def _with_room(self) -> ReplyView | None:
        """The last reply's view while it has room reserved below its text (it streams,
        or it finished and is not laid out at its final height yet)."""
        last = self._last_view()
        if last is None or not last.region or last.size.height <= last.text_height:
            return None
        return last

    def _tail_y(self) -> float:
        """The scroll offset that shows the last line drawn at the bottom.

        A streaming reply reserves room below its text (`ReplyView.text_height`);
        the view stops at the text, not at the room."""
        view = self._with_room()
        if view is None:
            return self.max_scroll_y
        text_bottom = view.virtual_region.y + view.text_height
        return min(self.max_scroll_y, max(0, text_bottom - self.scrollable_content_region.height))

    def validate_scroll_y(self, value: float) -> float:
        """No further down than one jump past the text while a reply has room (below
        is that room, blank)."""
        value = super().validate_scroll_y(value)
        if self._with_room() is None:
            return value
        return min(value, self._tail_y() + self._jump())

    def _jump(self) -> int:
        return self.scrollable_content_region.height // FOLLOW_JUMP

    def _scroll_to_end(self, decided_at: float) -> None:
        """Bring the last line drawn into view, a jump ahead while a reply streams.

        A scroll repaints the whole transcript, so a streaming reply is followed in
        jumps of a third of the view (into the room it reserves; xterm's jump
        scroll): its text holds still between them, and most redraws repaint a line.

        Args:
            decided_at: The scroll offset when following was decided, a refresh ago:
                above it now and not at the end, the user scrolled up meanwhile (a
                shorter transcript's clamp leaves it at the end), and the view stays.
        """
        if self.scroll_y < decided_at and not self.at_end:
            return
        tail = self._tail_y()
        if tail > 0 and self.scroll_y < tail:
            target = min(tail + self._jump(), self.max_scroll_y)
            self.scroll_to(y=target, animate=False, immediate=True)
            self._followed_to = self.scroll_y

    def sync_last(self) -> None:
        """Draw the tokens that arrived in the last reply, and follow them (a tick of
        the redraw timer with no new token neither redraws nor scrolls)."""
        if self.views:
            was_at_end = self.at_end
            if self.views[-1].sync():
                self.follow(was_at_end)

    # -- token cursor and colour -----------------------------------------------

    def action_move_token(self, delta: int) -> None:
        """Move the token cursor by `delta` tokens across all replies."""
        flat = [(n, i) for n, view in enumerate(self.views) for i in range(len(view.reply.tokens))]
        if not flat:
            return
        if self.cursor is None or self.cursor not in flat:
            position = len(flat) - 1
        else:
            position = min(max(flat.index(self.cursor) + delta, 0), len(flat) - 1)
        self.select(*flat[position])

    def action_alternatives(self) -> None:
        """Ask for the selected token's alternatives."""
        if self.cursor is not None:
            self.post_message(self.AlternativesAsked(self.cursor))

    def action_branch(self, delta: int) -> None:
        """Show the reply's next (1) or previous (-1) branch."""
        self.post_message(self.BranchAsked(delta))

    def action_parent_branch(self) -> None:
        """Show the branch the reply's branch forks from."""
        self.post_message(self.BranchAsked(None))

    def select(self, number: int, index: int) -> None:
        """Put the token cursor on token `index` of reply `number`."""
        self.cursor = (number, index)
        if number < len(self.views) and self.views[number].folded_at(index):
            self.views[number].set_thinking_open(True)  # the cursor went into a thinking
        self._sync_views()
        self.scroll_to_cursor()
        # The layout may change with the cursor (a selected blank token shows its
        # piece): once laid out again, the token is brought into view where it is then.
        self.call_after_refresh(self.scroll_to_cursor)
        self.post_message(self.TokenSelected(self.cursor))

    def scroll_to_cursor(self) -> None:
        """Scroll the selected token's line into view (in a reply taller than the
        view, that line rather than the reply's top)."""
        if self.cursor is None or self.cursor[0] >= len(self.views):
            return
        number, index = self.cursor
        view = self.views[number]
        where = view.virtual_region
        line = Region(where.x, where.y + view.line_of(index), where.width, 1)
        self.scroll_to_region(line, animate=False, immediate=True)

    def clear_cursor(self) -> None:
        """Leave token-cursor mode."""
        if self.cursor is not None:
            self.cursor = None
            self._sync_views()
            self.post_message(self.TokenSelected(None))

    def action_surprise(self, delta: int) -> None:
        """Move the token cursor to the next (1) or previous (-1) surprising token."""
        replies = [view.reply.tokens for view in self.views]
        found = surprising_after(replies, self.cursor, delta, self.surprise)
        if found is None:
            way = "after" if delta > 0 else "before"
            where = "this one" if self.cursor is not None else "the end" if delta < 0 else "it"
            self.notify(f"no surprising token ({self.surprise.text}) {way} {where}", timeout=3)
            return
        self.select(*found)

    def action_surprise_rule(self) -> None:
        """Switch to the next preset rule for surprising tokens."""
        self.set_surprise(next_rule(self.surprise))
        self.notify(f"surprising: {self.surprise.text}", timeout=3)

    def action_type_surprise_rule(self) -> None:
        """Type the rule for surprising tokens (p<BOUND or surprise>MARGIN)."""
        if covered(self):
            return  # a dialog is open already

        def typed(text: str | None) -> None:
            if not text:
                return
            try:
                self.set_surprise(parse_surprise(text))
            except SettingsError as error:
                self.notify(str(error), severity="error")
                return
            self.notify(f"surprising: {self.surprise.text}", timeout=3)

        hint = "p<BOUND: raw probability below it · surprise>MARGIN: nats over the entropy"
        self.app.push_screen(ValueEntryScreen("surprising tokens", self.surprise.text, hint), typed)

    def set_surprise(self, rule: SurpriseRule) -> None:
        """Change what counts as surprising (the timeline marks follow)."""
        self.surprise = rule
        self.post_message(self.SurpriseChanged())

    def action_colour_by_rank(self) -> None:
        """Switch the tint between probability and rank bucket (and turn it on)."""
        self.by_rank = not self.by_rank
        self.set_colour(True)
        self.notify(
            "colour by rank: top 10 · 100 · 1000 · beyond"
            if self.by_rank
            else "colour by probability",
            timeout=3,
        )

    @property
    def has_thinking(self) -> bool:
        """Whether a reply shown has a thinking (the thinking key shows then)."""
        return any(view.has_thinking for view in self.views)

    def toggle_thinking(self) -> bool:
        """Show every reply's thinking, or fold them all; returns whether shown."""
        self.thinking_shown = not self.thinking_shown
        for view in self.views:
            view.set_thinking_open(self.thinking_shown)
        self.call_after_refresh(self.scroll_to_cursor)
        return self.thinking_shown

    def set_colour(self, colour: bool) -> None:
        """Tint tokens by probability, or not."""
        self.colour = colour
        self._sync_views()

    def _sync_views(self) -> None:
        for number, view in enumerate(self.views):
            selected = self.cursor[1] if self.cursor and self.cursor[0] == number else None
            view.set_marks(TokenMarks(colour=self.colour, by_rank=self.by_rank, cursor=selected))

    @on(ReplyView.TokenClicked)
    def _on_token_clicked(self, message: ReplyView.TokenClicked) -> None:
        message.stop()
        if message.view in self.views:
            self.select(self.views.index(message.view), message.index)
