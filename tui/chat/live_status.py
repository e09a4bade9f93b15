"""What the status line shows while the chat runs: context used, tokens, tokens/s."""

from __future__ import annotations

from backend.session.backend import SessionBackend
from tui.chat.conversation import Conversation

PAINT_PHASES = ("reply", "probs", "reply", "probs", "reply", "probs", "reply", "status")
"""The chat view's turns at each tick of the redraw timer while a reply streams.

Textual repaints the bounding box of all that is dirty; transcript, bars and status
sit in three corners, so they take turns (transcript FLUSH_HZ/2 a second, bars 3/8,
status 1/8) to keep each update small."""


def status_changes(
    backend: SessionBackend | None,
    conversation: Conversation,
    generating: bool,
    generated: int,
    first_token_at: float | None,
    last_token_at: float | None,
) -> dict[str, object]:
    """The status line's live fields, from the chat's state.

    Args:
        backend: The loaded backend, or None before a model is loaded.
        conversation: The chat (its last reply is the one streaming).
        generating: Whether a reply is running.
        generated: Tokens the running reply sampled so far (a branch's tokens before
            its fork were given, not sampled: they do not count).
        first_token_at: When the running reply's first token arrived (clock seconds).
        last_token_at: When its latest token arrived.

    Returns:
        The `StatusLine.update` keyword arguments to apply.
    """
    changes: dict[str, object] = {}
    if backend is not None and not conversation.reset_pending:
        changes["ctx_used"] = backend.context_used
    if generating:
        count = generated
        changes["decode_tokens"] = count
        first, last = first_token_at, last_token_at
        if count > 1 and first is not None and last is not None and last > first:
            changes["decode_tps"] = (count - 1) / (last - first)
    return changes
