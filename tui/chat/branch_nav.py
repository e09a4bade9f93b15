"""Moving between the branches of the last reply (like swipes), and back to a parent.

The branch moved to becomes the reply on screen, with its tokens and their records;
the conversation (and the store's followed branch) goes on from its text. Only the
last reply's branches are switched: the turns after an earlier reply were made from
the text it shows.
"""

from __future__ import annotations

from typing import Protocol

from tui.chat.branches import branch_label, divergence, sibling
from tui.chat.conversation import Conversation
from tui.chat.reply_view import Reply

ONE_BRANCH = (
    "This reply has one branch: Enter on a token picks an alternative, ctrl+r "
    "regenerates; either adds a branch."
)
EARLIER_REPLY = (
    "Only the last reply's branches can be switched: the turns after this one were "
    "made from the branch shown."
)


class BranchHost(Protocol):
    """What branch moves need of the chat view (which calls them)."""

    conversation: Conversation
    generating: bool

    @property
    def cursor(self) -> tuple[int, int] | None: ...

    def notify(self, message: str) -> None: ...

    def show_last_branch(self, branch: Reply, at: int) -> None: ...


def move_branch(view: BranchHost, delta: int | None) -> None:
    """Show the last reply's branch `delta` places on (wrapping), or its parent (None)."""
    conversation = view.conversation
    if view.generating:
        view.notify("A reply is running: wait, or press Esc to stop it.")
        return
    if not conversation.ends_with_reply:
        view.notify("There is no reply to show another branch of.")
        return
    cursor = view.cursor
    if cursor is not None and cursor[0] != len(conversation.replies) - 1:
        view.notify(EARLIER_REPLY)
        return
    current = conversation.replies[-1]
    if delta is None:
        target = current.parent
        if target is None or target not in current.tree:
            view.notify("This is the reply's first branch: it forks from nothing.")
            return
    elif len(current.tree) < 2:
        view.notify(ONE_BRANCH)
        return
    else:
        target = sibling(current, delta)
    at = divergence(current, target)
    conversation.follow(target)
    view.show_last_branch(target, at)
    view.notify(branch_label(target))
