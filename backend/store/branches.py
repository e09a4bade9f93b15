"""A turn's reply tree in the chat store: starting, following and walking branches.

Each branch is a `replies` row. A turn's first reply has no parent; a branch made
from token `at` of another (its parent) shares the parent's tokens before `at` and
has its own from there on. Its per-token records are stored from `at` on: the ones
before are read from the parent (and its parent, up the tree).

The turn's message holds the text of the branch the conversation follows
(`messages.branch_id`; NULL: the turn's first reply), so continuing the chat or
replaying a later reply sees the text that was on screen.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from backend.store.read import load_steps, reply_text
from backend.store.records import ChatRecord, ModelRef, ReplyRecord, StoreError, settings_json
from backend.store.reply_row import insert_reply_row
from sampling.records import Step
from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class Fork:
    """Where a new branch leaves its parent.

    Attributes:
        parent: The branch it forks from.
        at: 0-based index of the first token of its own (0 ≤ at ≤ the parent's length).
        text: The text of the parent's tokens before `at` (the new branch's text so far).
        follow: Whether the conversation follows the new branch from now on.
    """

    parent: ReplyRecord
    at: int
    text: str
    follow: bool = True


def insert_reply(
    conn: sqlite3.Connection,
    message_id: int,
    model: ModelRef,
    settings: SamplerSettings,
    now: float,
    fork: Fork | None,
    run: Mapping[str, object],
) -> int:
    """Insert a reply's row and its first settings; returns its id.

    Args:
        run: How it runs, by `ReplyRecord` field (max_tokens, n_ctx, n_batch, mode,
            decoding: as `ChatStore.begin_reply` takes them).
    """
    reply_id = insert_reply_row(
        conn,
        {
            "message_id": message_id,
            "model": model,
            "seed": settings.seed,
            "rng": settings.rng,
            "created": now,
            "parent_id": None if fork is None else fork.parent.id,
            "fork_at": None if fork is None else fork.at,
            "text": "" if fork is None else fork.text,
            **run,
        },
    )
    conn.execute(
        "INSERT INTO settings_changes (reply_id, from_index, settings) VALUES (?, 0, ?)",
        (reply_id, settings_json(settings)),
    )
    return reply_id


def start_branch(
    conn: sqlite3.Connection, chat_id: int, reply_id: int, fork: Fork, now: float
) -> None:
    """Copy the shared tokens into a new branch's row and follow it if asked."""
    conn.execute(
        "INSERT INTO reply_tokens (reply_id, idx, token_id) "
        "SELECT ?, idx, token_id FROM reply_tokens WHERE reply_id = ? AND idx < ?",
        (reply_id, fork.parent.id, fork.at),
    )
    if fork.follow:
        conn.execute(
            "UPDATE messages SET branch_id = ?, content = ? WHERE id = ?",
            (reply_id, fork.text, fork.parent.message_id),
        )
    conn.execute("UPDATE chats SET updated = ? WHERE id = ?", (now, chat_id))


def follow(conn: sqlite3.Connection, path: Path, chat_id: int, reply_id: int, now: float) -> None:
    """Make a turn follow branch `reply_id` (its text becomes the turn's content).

    Raises:
        StoreError: The chat has no such reply.
    """
    row = conn.execute(
        "SELECT r.message_id FROM replies r "
        "JOIN messages m ON r.message_id = m.id WHERE r.id = ? AND m.chat_id = ?",
        (reply_id, chat_id),
    ).fetchone()
    if row is None:
        raise StoreError(f"chat database {path}: chat {chat_id} has no branch {reply_id}")
    conn.execute(
        "UPDATE messages SET branch_id = ?, content = ? WHERE id = ?",
        (reply_id, reply_text(conn, reply_id), row[0]),
    )
    conn.execute("UPDATE chats SET updated = ? WHERE id = ?", (now, chat_id))


def turn_of(chat: ChatRecord, reply: ReplyRecord) -> tuple[ReplyRecord, ...]:
    """Every branch of the turn `reply` belongs to, on screen or not."""
    return next((m.branches for m in chat.stored_messages if m.id == reply.message_id), ())


def lineage(reply: ReplyRecord, siblings: tuple[ReplyRecord, ...]) -> list[ReplyRecord]:
    """The branch and its ancestors within the turn, the branch first."""
    by_id = {branch.id: branch for branch in siblings}
    chain = [reply]
    while chain[-1].parent_id is not None and chain[-1].parent_id in by_id:
        chain.append(by_id[chain[-1].parent_id])
    return chain


def steps_along(
    conn: sqlite3.Connection, path: Path, reply: ReplyRecord, siblings: tuple[ReplyRecord, ...]
) -> dict[int, Step]:
    """Per-token records of every token of a branch: its own, then its ancestors'.

    Args:
        conn: The connection (the caller holds the store's lock).
        path: The database file, for error messages.
        reply: The branch.
        siblings: Every branch of its turn (`MessageRecord.branches`).

    Raises:
        StoreError: A record cannot be read.
    """
    chain = lineage(reply, siblings)
    steps = load_steps(conn, path, reply)
    limit = reply.fork_at
    for ancestor in chain[1:]:
        if limit is None:
            break
        own = load_steps(conn, path, ancestor)
        steps.update({i: s for i, s in own.items() if i < limit and i not in steps})
        limit = limit if ancestor.fork_at is None else min(limit, ancestor.fork_at)
    return steps


def pieces_along(conn: sqlite3.Connection, chat: ChatRecord, reply: ReplyRecord) -> dict[int, str]:
    """The text each token of a branch added, by index: its own tokens' stored pieces,
    then its ancestors' for the tokens it shares. A token stored without its piece
    (before schema 5) is missing.

    Args:
        conn: The connection (the caller holds the store's lock).
        chat: The chat it belongs to.
        reply: The branch.
    """
    pieces: dict[int, str] = {}
    limit = len(reply.token_ids)
    for branch in lineage(reply, turn_of(chat, reply)):
        for idx, piece in conn.execute(
            "SELECT idx, piece FROM reply_tokens WHERE reply_id = ? AND idx < ? "
            "AND piece IS NOT NULL",
            (branch.id, limit),
        ):
            pieces.setdefault(int(idx), str(piece))
        if branch.fork_at is None:
            break
        limit = min(limit, branch.fork_at)
    return pieces
