"""Steering the chat from a past token: its alternatives, and a branch from there."""

from __future__ import annotations

from typing import Any, Protocol

from textual.app import App

from backend.chat.protocol import LiveSettings
from tui.chat.conversation import Conversation
from tui.chat.reply import Reply
from tui.chat.reply_job import ReplyJob
from tui.runner import GenerationRunner
from tui.widgets.alternatives import Alternative, AlternativesScreen
from tui.widgets.token_text import TokenPieces

REPLY_RUNNING = "A reply is running: wait, or press Esc to stop it."


class SteeringHost(Protocol):
    """What steering needs of the chat view (which calls it)."""

    conversation: Conversation
    runner: GenerationRunner
    live: LiveSettings
    pieces: TokenPieces
    max_tokens: int
    generating: bool

    @property
    def app(self) -> App[Any]: ...

    def notify(self, message: str) -> None: ...

    def run_reply(self, reply: Reply, job: ReplyJob, *, replace: bool = False) -> None: ...


def refused(view: SteeringHost) -> bool:
    """Whether no job can start now (a model is loading, a reply runs): says why.

    Every way to start a job from the chat asks this first."""
    why = view.runner.unavailable()
    if why is None and view.generating:
        why = REPLY_RUNNING
    if why is not None:
        view.notify(why)
    return why is not None


def made_elsewhere(view: SteeringHost, number: int) -> bool:
    """Whether reply `number` was made by a model other than the loaded one (its
    tokens cannot be steered here): says so."""
    why = view.conversation.made_elsewhere(view.conversation.replies[number])
    if why is not None:
        view.notify(why)
    return why is not None


def ask_alternative(view: SteeringHost, number: int, index: int) -> None:
    """Show the alternatives of token `index` of reply `number`; the one chosen
    (or a re-sample) redoes the reply from there (`start_branch`)."""
    replies = view.conversation.replies
    if refused(view) or made_elsewhere(view, number):
        return
    if number == len(replies) - 1 and not view.conversation.ends_with_reply:
        view.notify("This reply has no text to branch from: regenerate it (ctrl+r).")
        return
    step = replies[number].tokens[index].step
    title = f"reply {number + 1} token {index + 1}"

    def chosen(choice: Alternative | None) -> None:
        if choice is not None:
            start_branch(view, index, choice.token, number)

    view.app.push_screen(AlternativesScreen(step, title, view.pieces), chosen)


def start_branch(
    view: SteeringHost,
    index: int,
    force: int | None,
    number: int | None = None,
    then: tuple[int, ...] = (),
) -> None:
    """Redo reply `number` (None: the last) from token `index`: the tokens before it
    kept, token `index` forced (None: drawn again with the live settings) and the
    tokens `then` after it (an explore path), the rest sampled. The old reply stays
    in the store as another branch of the turn, with the turns after it; the screen
    follows the new branch (the turns after it are cut)."""
    if refused(view) or made_elsewhere(view, -1 if number is None else number):
        return
    conversation = view.conversation
    reply, job = conversation.begin_branch(view.live, view.max_tokens, index, force, number, then)
    view.run_reply(reply, job, replace=True)


def regenerate(view: SteeringHost) -> None:
    """Redo the last reply with the live settings: a new branch of it (the old one
    stays another branch), or anew when the conversation does not end with it or
    another model made it (a branch of it would be another model's record)."""
    conversation = view.conversation
    if conversation.ends_with_reply:
        if conversation.made_elsewhere(conversation.replies[-1]) is None:
            start_branch(view, 0, None)
            return
        view.notify("Another model made the last reply: it is redone as a new reply.")
    dropped = view.conversation.drop_last_reply()
    reply, job = view.conversation.begin_reply(view.live, view.max_tokens)
    view.run_reply(reply, job, replace=dropped is not None)
