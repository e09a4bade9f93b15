"""Explore from a past token (`x` in the token cursor): the tree screen and its jobs.

The tree grows at the selected token of a reply of this session: the conversation
before the reply and the reply's tokens before the token make the point, rebuilt on
the model's worker as what-if rebuilds a step (`backend.session.explore.explore`), and
every node's step runs under the sampling panel's settings. A path chosen on the tree
screen becomes a branch of the reply: its tokens forced, the rest sampled
(`tui.chat.steering.start_branch`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from backend.chat.compare import ColumnEvent
from backend.chat.completion import Mode, as_document
from backend.chat.protocol import ChatMessage
from backend.session.backend import SessionBackend
from backend.session.explore import explore
from backend.session.explore_tree import Tree, TreeShape
from sampling.settings.record import SamplerSettings
from tui.chat.steering import SteeringHost, made_elsewhere, refused, start_branch
from tui.explore.screen import ExploreScreen, Path

#: The tree the app grows: 3 candidates a node, 3 levels (27 paths).
APP_SHAPE = TreeShape(depth=3, width=3)


class ExploreHost(SteeringHost, Protocol):
    """What exploring needs of the chat view."""


@dataclass
class ExploreJob:
    """Grows one tree on the model's worker (a `runner.Job`).

    Attributes:
        messages: The conversation before the reply.
        mode: "chat", or "completion" (the conversation is one document).
        prefix: The reply's tokens before the point.
        settings: The settings every node's step runs under.
        shape: How far the tree grows.
        max_tokens: The reply's length limit (it decides how the prompt is fitted).
        tree: The tree, once the job ran.
    """

    messages: Sequence[ChatMessage]
    mode: Mode
    prefix: tuple[int, ...]
    settings: SamplerSettings
    shape: TreeShape
    max_tokens: int
    tree: Tree | None = field(default=None)

    def __call__(self, backend: SessionBackend, cancel: threading.Event) -> Iterator[ColumnEvent]:
        """Grow the tree (worker thread); nothing streams."""
        raw = self.mode == "completion"
        self.tree = explore(
            backend,
            as_document(self.messages) if raw else self.messages,
            self.prefix,
            self.settings,
            self.shape,
            max_tokens=self.max_tokens,
            raw=raw,
            cancel=cancel,
        )
        yield from ()


def open_explore(
    host: ExploreHost, cursor: tuple[int, int] | None, shape: TreeShape = APP_SHAPE
) -> ExploreScreen | None:
    """`x`: the tree screen at the selected token (None: why not, as a notice)."""
    if cursor is None:
        host.notify("Select a past token first (ctrl+t, then ← →).")
        return None
    number, index = cursor
    if refused(host) or made_elsewhere(host, number):
        return None
    conversation = host.conversation
    reply = conversation.replies[number]
    messages = list(conversation.messages[: reply.turn])
    prefix = tuple(token.step.token_id for token in reply.tokens[:index])
    settings, mode, max_tokens = host.live.current, conversation.mode, host.max_tokens

    def job_for(path: Path) -> ExploreJob:
        # The memory then holds this point: the next reply starts from an empty one,
        # so that its record describes how its cache was made.
        conversation.reset_pending = True
        return ExploreJob(messages, mode, (*prefix, *path), settings, shape, max_tokens)

    def chosen(path: Path | None) -> None:
        if not path:
            return
        replies = conversation.replies
        if number == len(replies) - 1 and not conversation.ends_with_reply:
            host.notify("This reply has no text to branch from: regenerate it (ctrl+r).")
            return
        start_branch(host, index, path[0], number, then=path[1:])

    screen = ExploreScreen(
        f"reply {number + 1} token {index + 1}", host.runner, job_for, host.pieces
    )
    host.app.push_screen(screen, chosen)
    return screen
