"""The chat's plots: the reply timeline and the tail plot, kept on the selected token.

`ChatPlots` owns whether each plot is shown and draws both for the token the
transcript's cursor selects (the latest token without a cursor); the chat view
calls `draw` on its redraw ticks and when the cursor moves.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.chat.protocol import LiveSettings
from tui.chat.branches import ghost_forks
from tui.chat.conversation import Conversation
from tui.chat.reply import Reply
from tui.chat.tail_plot import TAIL_RANKS, TailPlot
from tui.chat.timeline import ReplyTimeline
from tui.chat.transcript import Transcript


def selected_token(replies: Sequence[Reply], cursor: tuple[int, int] | None) -> tuple[int, int]:
    """The (reply, token) the plots show: the cursor's, else the latest token's.

    (-1, -1) when no reply has a token.
    """
    if cursor is not None:
        return cursor
    for number in range(len(replies) - 1, -1, -1):
        if replies[number].tokens:
            return number, len(replies[number].tokens) - 1
    return -1, -1


class ChatPlots:
    """Shows, hides and draws the chat's timeline and tail plot.

    Args:
        live: The live settings: the tail plot asks the sampler for deeper ranks
            through them while it is shown.
        conversation: The chat's replies.
        transcript: The transcript, whose token cursor the plots follow and set.
    """

    def __init__(
        self,
        live: LiveSettings,
        conversation: Conversation,
        transcript: Transcript,
    ) -> None:
        self.timeline = ReplyTimeline(id="timeline")
        self.tail = TailPlot(id="tail")
        self.live = live
        self.conversation = conversation
        self.transcript = transcript

    @property
    def shown(self) -> tuple[int, bool]:
        """The timeline's rows (0 hidden, 2, or 3 with the kept count); the tail's state."""
        rows = 0
        if self.timeline.has_class("-shown"):
            rows = 3 if self.timeline.has_class("-kept") else 2
        return rows, self.tail.has_class("-shown")

    def toggle(self, plot: str) -> None:
        """Cycle the timeline ("timeline") or show/hide the tail plot ("tail")."""
        if plot == "timeline":
            self.cycle_timeline()
        elif plot == "tail":
            self.toggle_tail()

    def cycle_timeline(self) -> None:
        """Show the timeline, then add the kept count, then hide it."""
        rows, _ = self.shown
        self.timeline.set_class(rows in (0, 2), "-shown")
        self.timeline.set_class(rows == 2, "-kept")
        self.draw()

    def toggle_tail(self) -> None:
        """Show or hide the tail plot; steps record their deeper ranks while it is shown."""
        shown = not self.tail.has_class("-shown")
        self.tail.set_class(shown, "-shown")
        self.live.tail_ranks = TAIL_RANKS if shown else 0
        self.draw()

    def pick(self, index: int) -> None:
        """Put the token cursor on token `index` of the timeline's reply (a click)."""
        number = self.timeline.reply_number
        if number is not None and number < len(self.conversation.replies):
            self.transcript.screen.set_focus(self.transcript)
            self.transcript.select(number, index)

    def draw(self, timeline: bool = True, tail: bool = True) -> None:
        """Bring the shown plots up to the selected token.

        Args:
            timeline: Redraw the timeline (while a reply streams, the chat view's
                redraw ticks say when each plot is due).
            tail: Redraw the tail plot.
        """
        shown_rows, shown_tail = self.shown
        rows = shown_rows if timeline else 0
        tail = shown_tail and tail
        if not rows and not tail:
            return
        replies, cursor = self.conversation.replies, self.transcript.cursor
        number, index = selected_token(replies, cursor)
        tokens = replies[number].tokens if number >= 0 else []
        if rows:
            marked = index if cursor is not None else None
            ghosts = ghost_forks(replies[number]) if number >= 0 else []
            surprise = self.transcript.surprise
            loop = replies[number].loop if number >= 0 else None
            shown = number if number >= 0 else None
            self.timeline.show(shown, tokens, marked, ghosts, surprise, loop)
        if tail:
            self.tail.show(tokens[index].step if 0 <= index < len(tokens) else None)
