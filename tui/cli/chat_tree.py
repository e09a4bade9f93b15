"""A saved chat's reply tree as rows, one per branch (`tree --json`, `export --format json`)."""

from __future__ import annotations

from backend.store.store import ChatRecord


def tree_json(chat: ChatRecord) -> list[dict[str, object]]:
    """Every branch of every stored turn of the chat, turn by turn, oldest first.

    "shown": the branch is on screen; "followed": its turn follows it (on screen
    or not); "turn_shown": its turn is on screen; "after_reply_id": the branch of
    the previous generated turn its turn continues.
    """
    on_screen = {message.id for message in chat.messages}
    rows: list[dict[str, object]] = []
    for message in chat.stored_messages:
        followed = None if message.reply is None else message.reply.id
        for branch in message.branches:
            rows.append(
                {
                    "id": branch.id,
                    "reply": branch.number,
                    "parent": branch.parent_id,
                    "at": None if branch.fork_at is None else branch.fork_at + 1,
                    "tokens": len(branch.token_ids),
                    "finish_reason": branch.finish_reason,
                    "mode": branch.mode,
                    "shown": message.id in on_screen and followed == branch.id,
                    "followed": followed == branch.id,
                    "turn_shown": message.id in on_screen,
                    "message_id": message.id,
                    "after_reply_id": message.after_reply_id,
                }
            )
    return rows
