"""A saved chat's replies rebuilt for the screen from their per-token records.

A reopened chat's replies are shown, inspected and branched like this session's: each
branch of a turn becomes a `Reply` whose tokens carry their stored step records (the
candidate table and settings of each step), in one tree per turn.
"""

from __future__ import annotations

from backend.chat.events import TokenEvent
from backend.llama.utf8 import Utf8Stream
from backend.store.store import ChatRecord, ChatStore, MessageRecord, ReplyRecord
from sampling.records import Step
from tui.chat.reply import Reply
from tui.widgets.token_text import TokenBytes, TokenPieces


def stored_replies(record: ChatRecord, store: ChatStore, pieces: TokenPieces) -> dict[int, Reply]:
    """The followed branch of every generated turn that can be rebuilt, by message id.

    A turn whose followed branch lacks records (saved before records were kept) or
    whose tokens' bytes are unknown is left out: it is shown as plain text.

    Raises:
        StoreError: A record cannot be read.
    """
    token_bytes = pieces.token_bytes
    if token_bytes is None:
        return {}
    shown: dict[int, Reply] = {}
    for turn, message in enumerate(record.messages):
        reply = _turn_tree(record, store, pieces, token_bytes, message, turn)
        if reply is not None:
            shown[message.id] = reply
    return shown


def _turn_tree(
    record: ChatRecord,
    store: ChatStore,
    pieces: TokenPieces,
    token_bytes: TokenBytes,
    message: MessageRecord,
    turn: int,
) -> Reply | None:
    """Every branch of a turn that has its records, in one tree; the followed one."""
    if message.reply is None:
        return None
    tree: list[Reply] = []
    by_id: dict[int, Reply] = {}
    parents: dict[int, int] = {}
    for branch in message.branches:
        tokens = _tokens(branch, store.load_steps(record, branch), pieces, token_bytes)
        if tokens is None:
            continue
        if branch.parent_id is not None:
            parents[branch.id] = branch.parent_id
        reply = Reply(
            seed=branch.seed,
            settings=branch.settings_changes[0].settings,
            tokens=tokens,
            finished=branch.finish_reason,
            error=branch.error or "",
            turn=turn,
            branch_id=branch.id,
            parent=by_id.get(branch.parent_id) if branch.parent_id is not None else None,
            fork_at=branch.fork_at,
            tree=tree,
            model=branch.model.path,
            loop=branch.loop,
        )
        by_id[branch.id] = reply
    # A ghost's parent can be a later ghost (the one its tokens went with).
    for child, parent in parents.items():
        if child in by_id and by_id[child].parent is None:
            by_id[child].parent = by_id.get(parent)
    return by_id.get(message.reply.id)


def _tokens(
    branch: ReplyRecord, steps: dict[int, Step], pieces: TokenPieces, token_bytes: TokenBytes
) -> list[TokenEvent] | None:
    """The branch's tokens as the live reply had them, or None if a record is missing."""
    if not branch.token_ids or any(i not in steps for i in range(len(branch.token_ids))):
        return None
    stream = Utf8Stream()
    texts: list[str] = []
    for token_id in branch.token_ids:
        try:
            texts.append(stream.feed(token_bytes(token_id)))
        except IndexError:
            return None
    if texts:
        texts[-1] += stream.flush()
        if "".join(texts) != branch.text and "".join(texts[:-1]) == branch.text:
            texts[-1] = ""  # an end-of-generation token adds no text
    return [
        TokenEvent(index, steps[index], text, pieces(token_id))
        for index, (token_id, text) in enumerate(zip(branch.token_ids, texts, strict=True))
    ]
