"""The chat's selection, and what a per-token panel is.

The chat view's `selected` is the token its panels show: the token cursor's, else
the latest token of the conversation. A per-token panel is a `ChatPanel`: a widget
made from the chat view (`PanelHost`) with a `selected` reactive of its own, which
the chat view sets (every panel at once when the cursor moves or nothing streams;
while a reply streams, each panel every `PAINT_EVERY` ticks of the redraw timer), and
a `watch_selected` that draws it. The panels the chat shows are the list in
`tui.chat.panels`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol, TypeVar

from textual.reactive import reactive
from textual.widget import Widget

from backend.chat.events import TokenEvent
from backend.chat.protocol import LiveSettings
from sampling.analysis.surprise import SurpriseRule
from sampling.records import Step
from sampling.sections import Section
from tui.chat.reply import Reply
from tui.widgets.token_text import TokenPieces


@dataclass(frozen=True, eq=False)
class Selection:
    """The token the panels show, taken at one moment.

    Compared by identity: the chat view takes a new one at every redraw, and each
    panel checks what it draws (a streaming reply's token list grows in place).

    Attributes:
        replies: The conversation's replies.
        number: The reply of the token (None: no reply has a token).
        index: The token in that reply.
        cursor: Whether the token cursor chose it (else it is the latest token).
        note: What the panels say when no token is selected ("" for nothing).
    """

    replies: Sequence[Reply] = ()
    number: int | None = None
    index: int = -1
    cursor: bool = False
    note: str = ""

    @property
    def reply(self) -> Reply | None:
        """The selected token's reply."""
        number = self.number
        return None if number is None or number >= len(self.replies) else self.replies[number]

    @property
    def tokens(self) -> Sequence[TokenEvent]:
        """The reply's tokens (empty when nothing is selected)."""
        reply = self.reply
        return () if reply is None else reply.tokens

    @property
    def step(self) -> Step | None:
        """The selected token's sampling step."""
        tokens = self.tokens
        return tokens[self.index].step if 0 <= self.index < len(tokens) else None

    @property
    def at(self) -> tuple[int, int] | None:
        """The token cursor's (reply, token), or None when it selects the latest."""
        return (self.number, self.index) if self.cursor and self.number is not None else None

    @property
    def title(self) -> str:
        """ "reply 2 token 5/40" (the cursor's), "token 40 (latest)", else the note;
        "· thinking" after it for a token of a thinking model's thinking."""
        if self.number is None:
            return self.note
        count = len(self.tokens)
        step = self.step
        section = " · thinking" if step is not None and step.section is Section.THINKING else ""
        if self.cursor:
            return f"reply {self.number + 1} token {self.index + 1}/{count}{section}"
        return f"token {count} (latest){section}"


NOTHING = Selection()
"""No token selected (before the first reply)."""


def select(replies: Sequence[Reply], cursor: tuple[int, int] | None, note: str = "") -> Selection:
    """The token the panels show: the `cursor`'s, else the latest token of `replies`.

    Args:
        replies: The conversation's replies.
        cursor: The token cursor's (reply, token), or None.
        note: What the panels say when no reply has a token.
    """
    if cursor is not None:
        return Selection(replies, cursor[0], cursor[1], cursor=True, note=note)
    for number in range(len(replies) - 1, -1, -1):
        if replies[number].tokens:
            return Selection(replies, number, len(replies[number].tokens) - 1, note=note)
    return Selection(replies, note=note)


PanelT = TypeVar("PanelT", bound="ChatPanel")


class PanelHost(Protocol):
    """What a panel may use of the chat view (which makes it)."""

    live: LiveSettings
    """The live settings (the tail plot asks for deeper ranks through them)."""
    pieces: TokenPieces
    """Shows any token id."""
    selected: Selection
    """The chat's selection (a panel shown again draws it)."""

    @property
    def surprise(self) -> SurpriseRule:
        """Which tokens count as surprising."""
        ...

    def select_token(self, number: int, index: int) -> None:
        """Put the token cursor on token `index` of reply `number`."""
        ...

    def panel(self, kind: type[PanelT]) -> PanelT:
        """The chat's panel of that class."""
        ...


class ChatPanel(Widget):
    """A per-token panel: it draws the chat's selection (see the module doc).

    A subclass sets `NAME` (its widget id, and its name for the keys), `COLUMN` and
    `PAINT_EVERY`, takes the `PanelHost` as its one argument, keeps its CSS in
    `DEFAULT_CSS` (not scoped: a rule may start at the screen) and draws in
    `watch_selected`.
    """

    SCOPED_CSS: ClassVar[bool] = False
    NAME: ClassVar[str] = ""
    """The panel's widget id."""
    COLUMN: ClassVar[Literal["left", "right"]] = "right"
    """Where it goes: under the transcript ("left"), or in the panels' column."""
    PAINT_EVERY: ClassVar[int] = 4
    """While a reply streams, it draws the latest token every so many ticks of the
    redraw timer (`tui.runner.FLUSH_HZ` a second)."""

    host: PanelHost
    """The chat view (each panel sets it as it is made)."""
    selected: reactive[Selection] = reactive(NOTHING, init=False)
    """The token it shows; set by the chat view."""

    def watch_selected(self, selection: Selection) -> None:
        """Draw `selection` (each panel's own)."""

    def toggle(self) -> None:
        """Show or hide it (the key of a panel hidden at first; each may do more)."""
        self.display = not self.display
        self.redraw()

    def redraw(self) -> None:
        """Draw the chat's selection now (it was shown again, or a rule changed)."""
        selection = self.host.selected
        if selection is self.selected:
            self.watch_selected(selection)
        else:
            self.selected = selection
