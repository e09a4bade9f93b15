"""The transcript: user turns and assistant replies, scrolling as tokens arrive."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui.display import display_text
from tui.widgets.reply_view import Reply, ReplyView


class Transcript(VerticalScroll, can_focus=True):
    """The conversation. When focused it is in token-cursor mode: ←/→ pick a token."""

    BINDINGS = [
        Binding("left", "app.move_token(-1)", "prev token", key_display="←"),
        Binding("right", "app.move_token(1)", "next token", key_display="→"),
        Binding("home", "app.move_token(-1000000)", "first", show=False),
        Binding("end", "app.move_token(1000000)", "last", show=False),
    ]

    @property
    def at_end(self) -> bool:
        """Whether the view shows the bottom (then it follows new content)."""
        return self.scroll_y >= self.max_scroll_y - 1

    def follow(self, was_at_end: bool = True) -> None:
        """Scroll to the bottom once laid out, if the view was there before.

        (Textual's `anchor()` scrolls a short transcript to a negative offset in
        textual 8.2.8, so the transcript follows its tail by hand.)
        """
        if was_at_end:
            self.call_after_refresh(self._scroll_to_end)

    def _scroll_to_end(self) -> None:
        if self.max_scroll_y > 0:
            self.scroll_end(animate=False, immediate=True)

    def _follow(self) -> None:
        self.follow(self.at_end)

    def add_user(self, text: str) -> Static:
        """Append a user turn (shown literally)."""
        widget = Static(Text(display_text(text)), classes="user")
        self.mount(widget)
        self._follow()
        return widget

    def add_reply(self, reply: Reply, number: int) -> ReplyView:
        """Append an assistant reply's view."""
        view = ReplyView(reply, number)
        self.mount(view)
        self._follow()
        return view

    def add_note(self, text: str, *, error: bool = False) -> Static:
        """Append a notice or an error line."""
        widget = Static(Text(display_text(text)), classes="error" if error else "note")
        self.mount(widget)
        self._follow()
        return widget

    def clear(self) -> None:
        """Remove everything."""
        self.remove_children()
        self.scroll_home(animate=False, immediate=True)
