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
        changes["ctx_used"], changes["ctx_note"] = context_status(
            backend.context_used, None if generating or latest is None else latest.context_tokens
        )
    if generating:
        count = generated
        changes["decode_tokens"] = count
        first, last = first_token_at, last_token_at
        if count > 1 and first is not None and last is not None and last > first:
            changes["decode_tps"] = (count - 1) / (last - first)
    return changes


def context_status(held: int, conversation: int | None) -> tuple[int, str]:
    """The status line's context count and its note.

    A reply decoded beside other sequences (its negative prompt's, for guidance) ran in
    a lockstep context of its own, freed when it ended: the chat's memory then lacks
    the conversation's tokens, and the next reply prefills what it lacks. The count is
    then the conversation's (what the next prompt needs, before its new message), as
    llama-server counts a slot's tokens, with a note saying so; else what the memory
    holds.

    Args:
        held: Tokens the chat's memory holds.
        conversation: Tokens the last reply's context held when it ended, its prompt
            included (None: unknown, or a reply runs).
    """
    if conversation is not None and conversation > held:
        return conversation, "prefills again"
    return held, ""
