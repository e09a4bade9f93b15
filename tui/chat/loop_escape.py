"""Out of a loop: open the why view of a reply's loop, then go back to where it began.

`a` on the why view goes back to the loop's first token and opens its alternatives
(the one chosen makes a new branch from there, as steering does). `x` makes a branch
from there with the loop's first copy banned as a phrase: the branch samples the
copy again, the phrase-ban backtracking rejects it once it is whole, bans its first
token there and goes on; the rejected attempt stays a ghost branch.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from backend.session.phrase_bans import PhraseBans
from sampling.analysis.loops import Loop
from tui.chat.steering import ask_alternative, made_elsewhere, refused
from tui.loops.why_screen import LoopWhyScreen, WhyChoice

if TYPE_CHECKING:
    from tui.chat.view import ChatView

NO_LOOP = (
    "No loop in this reply (replies are watched for loops when the sampling panel's "
    "loops group says mark or stop)."
)


def loop_reply(view: ChatView) -> int | None:
    """The reply whose loop to show: the token cursor's, else the last one with a loop."""
    replies = view.conversation.replies
    if view.cursor is not None:
        return view.cursor[0]
    for number in range(len(replies) - 1, -1, -1):
        if replies[number].loop is not None:
            return number
    return None


def open_loop_why(view: ChatView) -> None:
    """Show why the selected (else the last looping) reply looped; act on the choice."""
    number = loop_reply(view)
    replies = view.conversation.replies
    loop = replies[number].loop if number is not None else None
    if number is None or loop is None:
        view.notify(NO_LOOP)
        return
    if view.generating:
        view.notify("A reply is running: wait, or press Esc to stop it.")
        return
    reply = replies[number]
    if loop.start + loop.period > len(reply.tokens):
        view.notify("This reply's loop lies past its tokens on screen: nothing to show.")
        return
    keeper = view.whatif.keeper

    def chosen(choice: WhyChoice | None) -> None:
        if choice == "alternatives":
            ask_alternative(view, number, loop.start)
        elif choice == "ban":
            ban_loop(view, number, loop)

    screen = LoopWhyScreen(
        number, reply.tokens, loop, view.pieces, lambda index: keeper.get(reply, index)
    )
    view.app.push_screen(screen, chosen)


def loop_phrase(view: ChatView, number: int, loop: Loop) -> str:
    """The text of the loop's first copy in reply `number`."""
    tokens = view.conversation.replies[number].tokens
    return "".join(token.text for token in tokens[loop.start : loop.start + loop.period])


def ban_loop(view: ChatView, number: int, loop: Loop) -> None:
    """Redo reply `number` from the loop's start with its first copy banned (see the
    module doc); the bans in force stay, this one is the branch's own."""
    phrase = loop_phrase(view, number, loop)
    if not phrase:
        view.notify("The loop's tokens make no text to ban: choose an alternative (a).")
        return
    if refused(view) or made_elsewhere(view, number):
        return
    conversation = view.conversation
    branch, job = conversation.begin_branch(view.live, view.max_tokens, loop.start, None, number)
    job = replace(job, bans=branch_bans(conversation.bans, phrase))
    view.run_reply(branch, job, replace=True)


def branch_bans(bans: PhraseBans, phrase: str) -> PhraseBans:
    """`bans` with `phrase` (plain text) added."""
    return replace(bans, phrases=(*bans.phrases, re.escape(phrase) if bans.regex else phrase))
