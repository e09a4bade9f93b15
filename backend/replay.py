"""Regenerate a stored reply with its recorded settings schedule and compare tokens.

A reply is reproducible from: the conversation before it, the model file, the
settings at token 0 (seed and generator included) and every later settings change
with the index it took effect at. `replay` feeds the backend a `LiveSettings` and
switches `.current` right after the TokenEvent that precedes each recorded change, so
the backend (which reads `.current` before every token) samples token i with exactly
the settings recorded for i, on the same random stream.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from backend.events import FinishedEvent, NoticeEvent, TokenEvent
from backend.protocol import ChatBackend, ChatMessage, LiveSettings
from backend.store_records import ChatRecord, ReplyRecord, StoreError
from sampling.errors import SamplescopeError
from sampling.settings import SamplerSettings


class ReplayError(SamplescopeError):
    """A reply cannot be replayed (nothing to replay, or the generation failed)."""


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """How a regenerated reply compares with the stored one.

    Attributes:
        stored: The stored token ids.
        replayed: The regenerated token ids.
        finish_reason: Why the regeneration ended.
        text: The regenerated text.
        notices: Backend notices (e.g. old turns dropped to fit the context).
    """

    stored: tuple[int, ...]
    replayed: tuple[int, ...]
    finish_reason: str
    text: str
    notices: tuple[str, ...] = ()

    @property
    def identical(self) -> bool:
        """Whether the token ids match one for one."""
        return self.stored == self.replayed

    @property
    def first_difference(self) -> int | None:
        """The first index where the sequences differ (None when identical)."""
        if self.identical:
            return None
        for index, (a, b) in enumerate(zip(self.stored, self.replayed, strict=False)):
            if a != b:
                return index
        return min(len(self.stored), len(self.replayed))


def pick_reply(chat: ChatRecord, number: int | None) -> ReplyRecord:
    """Reply `number` (1-based) of a chat, or its last reply when None.

    Raises:
        StoreError: The chat has no generated reply, or no reply with that number.
    """
    replies = chat.replies
    if not replies:
        raise StoreError(f"chat {chat.id} has no generated reply to replay")
    if number is None:
        return replies[-1]
    if not 1 <= number <= len(replies):
        raise StoreError(
            f"chat {chat.id} has no reply {number}: it has replies 1 to {len(replies)}"
        )
    return replies[number - 1]


def replay(
    backend: ChatBackend,
    messages: Sequence[ChatMessage],
    reply: ReplyRecord,
    *,
    cancel: threading.Event | None = None,
    on_token: Callable[[TokenEvent], None] | None = None,
) -> ReplayResult:
    """Regenerate `reply` from `messages` (the turns before it) on `backend`.

    The generation is limited to as many tokens as were stored (a stored
    end-of-generation token is among them), so an interrupted or cancelled reply is
    compared on the part that exists. The backend's KV cache is reset first.

    Raises:
        ReplayError: The reply has no tokens, or the generation ended in an error.
    """
    if not reply.token_ids:
        raise ReplayError(f"reply {reply.number} has no tokens to replay")
    schedule: dict[int, SamplerSettings] = {
        change.from_index: change.settings for change in reply.settings_changes
    }
    live = LiveSettings(reply.settings_at(0))
    backend.reset()
    replayed: list[int] = []
    notices: list[str] = []
    finished: FinishedEvent | None = None
    events = backend.generate(list(messages), live, max_tokens=len(reply.token_ids), cancel=cancel)
    for event in events:
        if isinstance(event, TokenEvent):
            replayed.append(event.step.token_id)
            upcoming = schedule.get(event.index + 1)
            if upcoming is not None:
                live.current = upcoming
            if on_token is not None:
                on_token(event)
        elif isinstance(event, NoticeEvent):
            notices.append(event.message)
        elif isinstance(event, FinishedEvent):
            finished = event
    if finished is None:
        raise ReplayError("the backend ended without finishing the replay")
    if finished.reason == "error":
        raise ReplayError(f"the replay failed: {finished.error}")
    return ReplayResult(
        stored=reply.token_ids,
        replayed=tuple(replayed),
        finish_reason=finished.reason,
        text=finished.text,
        notices=tuple(notices),
    )
