"""A screen styled once as it opens: Textual restyles every node of a screen when the
screen resumes, and a screen resumes right after its nodes mount (and were styled)."""

from __future__ import annotations

from typing import TypeVar

from textual import events
from textual.message import Message
from textual.screen import Screen

ResultT = TypeVar("ResultT")


class StyledOnceScreen(Screen[ResultT]):
    """A `Screen` whose first `ScreenResume` does not restyle it.

    Textual resumes a screen as it is pushed (or as the app starts, for the default
    screen), and a resume restyles every node of the screen, each styled a moment
    before as it mounted: for the chat's screen a quarter of the app start's restyles.
    Later resumes (back from another screen) are left as Textual makes them.
    """

    _resumed = False

    def post_message(self, message: Message) -> bool:
        """Post `message`; the screen's first `ScreenResume` without its restyle."""
        if not self._resumed and isinstance(message, events.ScreenResume):
            self._resumed = True
            message.refresh_styles = False
        return super().post_message(message)
