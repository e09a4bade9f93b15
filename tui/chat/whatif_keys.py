"""The app's what-if keys (`w`, `b` in `tui.bindings`), kept out of `tui.app`."""

from __future__ import annotations

from tui.chat.view import ChatView


class WhatIfKeys:
    """Actions of the what-if keys, mixed into the app (which has the chat view)."""

    chat: ChatView

    def action_whatif(self) -> None:
        """What-if on the selected past token (again: off)."""
        self.chat.whatif.toggle(self.chat.cursor)

    def action_whatif_branch(self) -> None:
        """Branch from the what-if step with the token it shows drawn."""
        self.chat.whatif.branch()
