"""The status line's live fields while the chat runs: context used, the running reply's
count and pace, the last reply's loop."""

from __future__ import annotations

from backend.chat.protocol import ChatBackend
from tui.chat.conversation import Conversation
from tui.widgets.status_line import loop_status


def status_changes(
    backend: ChatBackend | None,
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
    latest = conversation.replies[-1] if conversation.replies else None
    changes["loop"] = loop_status(latest.loop if latest is not None else None)
    if backend is not None and not conversation.reset_pending:
        changes["ctx_used"] = backend.context_used
    if generating:
        count = generated
        changes["decode_tokens"] = count
        first, last = first_token_at, last_token_at
        if count > 1 and first is not None and last is not None and last > first:
            changes["decode_tps"] = (count - 1) / (last - first)
    return changes
