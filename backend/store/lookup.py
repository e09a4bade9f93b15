"""Name a stored reply: by its number in the chat, by branch id, and a token in it.

The commands that work on a saved reply (replay, what-if, branch, explore, fork) find
it and the settings one of its tokens was sampled with here, reading only the store.
"""

from __future__ import annotations

from backend.store.branches import lineage, turn_of
from backend.store.records import ChatRecord, ReplyRecord, StoreError
from sampling.settings.record import SamplerSettings


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


def find_branch(chat: ChatRecord, number: int | None, branch_id: int | None) -> ReplyRecord:
    """Reply `number` (1-based; None: the last) of a chat, on branch `branch_id`
    (None: the branch the conversation follows).

    Raises:
        StoreError: No such reply or branch.
    """
    turns = [m for m in chat.messages if m.reply is not None]
    if not turns:
        raise StoreError(f"chat {chat.id} has no generated reply")
    if number is None:
        number = len(turns)
    if not 1 <= number <= len(turns):
        raise StoreError(f"chat {chat.id} has no reply {number}: it has replies 1 to {len(turns)}")
    turn = turns[number - 1]
    if branch_id is None:
        assert turn.reply is not None
        return turn.reply
    for branch in turn.branches:
        if branch.id == branch_id:
            return branch
    ids = ", ".join(str(b.id) for b in turn.branches)
    raise StoreError(f"reply {number} of chat {chat.id} has no branch {branch_id} (it has {ids})")


def check_position(reply: ReplyRecord, position: int) -> int:
    """The 0-based index of 1-based token `position` of a branch.

    Raises:
        StoreError: The branch has no such token.
    """
    count = len(reply.token_ids)
    if not 1 <= position <= count:
        raise StoreError(
            f"reply {reply.number} (branch {reply.id}) has {count} tokens: "
            f"the position must be 1 to {count}, not {position}"
        )
    return position - 1


def settings_for(chat: ChatRecord, reply: ReplyRecord, index: int) -> SamplerSettings:
    """The settings token `index` of a branch was sampled with (its parent's before its fork).

    Raises:
        StoreError: They cannot run here (a sampler plug-in they used is not loaded).
    """
    if reply.replay_problem is not None:
        raise StoreError(f"reply {reply.number} cannot run again: {reply.replay_problem}")
    for branch in lineage(reply, turn_of(chat, reply)):
        if branch.fork_at is None or index >= branch.fork_at:
            return branch.settings_at(index)
    return reply.settings_at(index)
