"""Moving between the branches of a reply (like swipes), and back to a parent.

The branch moved to is shown with its tokens and their records, and the conversation
(and the store's followed branch) goes on from its text. For the last reply that is
all; for an earlier one the saved chat is shown again along the branch moved to, with
the turns that follow it (needs the chat database).
"""

from __future__ import annotations

from typing import Protocol

from backend.store.store import ChatRecord, StoreError
from tui.chat.branches import branch_label, divergence, sibling
from tui.chat.conversation import Conversation
from tui.chat.reply import Reply

ONE_BRANCH = (
    "This reply has one branch: Enter on a token picks an alternative, ctrl+r "
    "regenerates; either adds a branch."
)
EARLIER_REPLY = (
    "An earlier reply's branches can be switched in a saved chat only: the turns "
    "after each branch are read back from the chat database."
)


class BranchHost(Protocol):
    """What branch moves need of the chat view (which calls them)."""

    conversation: Conversation
    generating: bool

    @property
    def cursor(self) -> tuple[int, int] | None: ...

    def notify(self, message: str) -> None: ...

    def show_last_branch(self, branch: Reply, at: int) -> None: ...

    def show_chat(self, record: ChatRecord, cursor: tuple[int, int] | None = None) -> None: ...


def move_branch(view: BranchHost, delta: int | None) -> None:
    """Show the selected reply's (else the last reply's) branch `delta` places on
    (wrapping), or its parent (None)."""
    conversation = view.conversation
    if view.generating:
        view.notify("A reply is running: wait, or press Esc to stop it.")
        return
    last = len(conversation.replies) - 1
    cursor = view.cursor
    number = cursor[0] if cursor is not None else last
    if number == last and not conversation.ends_with_reply:
        view.notify("There is no reply to show another branch of.")
        return
    current = conversation.replies[number]
    target = _target(view, current, delta)
    if target is None:
        return
    at = divergence(current, target)
    if number == last:
        conversation.follow(target)
        view.show_last_branch(target, at)
    elif not _reopen_along(view, target, (number, at)):
        return
    view.notify(branch_label(target))


def _target(view: BranchHost, current: Reply, delta: int | None) -> Reply | None:
    """The branch to move to, or None (and a notice) when there is none."""
    if delta is None:
        if current.parent is None or current.parent not in current.tree:
            view.notify("This is the reply's first branch: it forks from nothing.")
            return None
        return current.parent
    if len(current.tree) < 2:
        view.notify(ONE_BRANCH)
        return None
    return sibling(current, delta)


def _reopen_along(view: BranchHost, target: Reply, cursor: tuple[int, int]) -> bool:
    """Follow `target` (of an earlier turn) in the store and show the chat along it."""
    recorder = view.conversation.recorder
    chat_id = recorder.chat_id if recorder is not None else None
    if recorder is None or chat_id is None or target.branch_id is None:
        view.notify(EARLIER_REPLY)
        return False
    try:
        if not recorder.follow(target.branch_id):
            raise StoreError(recorder.error or "the chat database failed")
        record = recorder.open_chat(chat_id)
    except StoreError as error:
        view.notify(str(error))
        return False
    view.show_chat(record, cursor)
    return True
