"""The chat store's read queries (run under the store's lock by `ChatStore`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from backend.store.records import (
    ChatRecord,
    ChatSummary,
    MessageRecord,
    ModelRef,
    ReplyRecord,
    SettingsChange,
    StoreError,
)
from backend.store.reply_row import reply_fields, select_list, to_datetime
from backend.store.steps import StepLayout, unpack_step
from backend.store.stored_settings import parse_stored_settings
from sampling.records import Step
from sampling.settings.registry import Registry


def _named_rows(conn: sqlite3.Connection, sql: str, parameters: tuple[object, ...]) -> list[Any]:
    """A query's rows, read by column name (the connection's own rows stay tuples)."""
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    return cursor.execute(sql, parameters).fetchall()


def escape_like(text: str) -> str:
    """`text` with LIKE's wildcards escaped (ESCAPE '\\')."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def list_chats(conn: sqlite3.Connection, search: str | None) -> list[ChatSummary]:
    """Chats, most recently updated first.

    Args:
        search: Keep only chats whose title or any message contains this text
            (case-insensitive for ASCII); None or "" keeps all.
    """
    pattern = f"%{escape_like(search)}%" if search else None
    rows = conn.execute(
        """
            SELECT c.id, c.title, c.created, c.updated, coalesce(c.model_path, ''),
                (SELECT count(*) FROM messages m WHERE m.chat_id = c.id),
                (SELECT count(DISTINCT r.message_id) FROM replies r
                    JOIN messages m ON r.message_id = m.id WHERE m.chat_id = c.id),
                (SELECT count(*) FROM replies r JOIN messages m ON r.message_id = m.id
                    WHERE m.chat_id = c.id),
                c.sweep_id
            FROM chats c
            WHERE ?1 IS NULL OR c.title LIKE ?1 ESCAPE '\\' OR EXISTS (
                SELECT 1 FROM messages m
                WHERE m.chat_id = c.id AND m.content LIKE ?1 ESCAPE '\\') OR EXISTS (
                -- an unfinished reply's text is its start and its tokens' pieces
                SELECT 1 FROM replies r JOIN messages m ON r.message_id = m.id
                WHERE m.chat_id = c.id AND r.finished IS NULL
                    AND coalesce(r.text, '') || coalesce((SELECT group_concat(piece, '')
                        FROM (SELECT piece FROM reply_tokens t WHERE t.reply_id = r.id
                            ORDER BY t.idx)), '') LIKE ?1 ESCAPE '\\')
            ORDER BY c.updated DESC, c.id DESC
            """,
        (pattern,),
    ).fetchall()
    return [
        ChatSummary(
            id=int(row[0]),
            title=str(row[1]),
            created=to_datetime(row[2]),
            updated=to_datetime(row[3]),
            model_path=str(row[4]),
            message_count=int(row[5]),
            reply_count=int(row[6]),
            branch_count=int(row[7]),
            sweep_id=None if row[8] is None else int(row[8]),
        )
        for row in rows
    ]


def load_chat(conn: sqlite3.Connection, path: Path, chat_id: int, registry: Registry) -> ChatRecord:
    """A whole chat: its turns, and for generated turns the reply records (their
    settings read with `registry`).

    Raises:
        StoreError: There is no such chat, or a stored record cannot be read.
    """
    chats = _named_rows(
        conn,
        "SELECT id, title, created, updated, model_path, model_size, model_sha256 "
        "FROM chats WHERE id = ?",
        (chat_id,),
    )
    if not chats:
        raise StoreError(f"chat database {path} has no chat {chat_id}")
    chat = chats[0]
    rows = _message_rows(conn, chat_id)
    shown = {int(row["id"]) for row in _visible(conn, chat_id, rows)[0]}
    after = {
        int(row["id"]): None if row["after_reply_id"] is None else int(row["after_reply_id"])
        for row in rows
    }
    branches = _load_replies(conn, path, chat_id, shown, after, registry)
    turns = [_turn(row, branches.get(int(row["id"]), ()), after[int(row["id"])]) for row in rows]
    model = (
        ModelRef(str(chat["model_path"]), int(chat["model_size"]), str(chat["model_sha256"]))
        if chat["model_path"] is not None
        else None
    )
    return ChatRecord(
        id=int(chat["id"]),
        title=str(chat["title"]),
        created=to_datetime(chat["created"]),
        updated=to_datetime(chat["updated"]),
        model=model,
        messages=tuple(turn for turn in turns if turn.id in shown),
        hidden=tuple(turn for turn in turns if turn.id not in shown),
    )


def _turn(row: Any, branches: tuple[ReplyRecord, ...], after: int | None) -> MessageRecord:
    """One turn from its message row; an unfinished followed branch gives its text so far."""
    followed = _followed(branches, row["branch_id"])
    unfinished = followed is not None and followed.finished is None
    return MessageRecord(
        id=int(row["id"]),
        position=int(row["position"]),
        role=row["role"],
        content=followed.text if followed is not None and unfinished else str(row["content"]),
        created=to_datetime(row["created"]),
        reply=followed,
        branches=branches,
        after_reply_id=after,
    )


def visible_messages(conn: sqlite3.Connection, chat_id: int) -> tuple[list[Any], int | None]:
    """The chat's turns along the branches it follows, and the branch its last
    generated turn follows (None: none yet).

    A turn added after a branch the chat no longer follows (`after_reply_id`) is
    left out, with the turns after it: they continue the other branch.

    Returns:
        (rows of id, position, role, content, created, branch_id, after_reply_id,
        read by name; the branch id).
    """
    return _visible(conn, chat_id, _message_rows(conn, chat_id))


def _message_rows(conn: sqlite3.Connection, chat_id: int) -> list[Any]:
    """Every stored turn of a chat, on screen or not, in position order."""
    return _named_rows(
        conn,
        "SELECT id, position, role, content, created, branch_id, after_reply_id "
        "FROM messages WHERE chat_id = ? ORDER BY position",
        (chat_id,),
    )


def _visible(
    conn: sqlite3.Connection, chat_id: int, rows: list[Any]
) -> tuple[list[Any], int | None]:
    """`visible_messages` over the chat's message rows `rows`."""
    first = dict(
        conn.execute(
            "SELECT r.message_id, min(r.id) FROM replies r JOIN messages m "
            "ON r.message_id = m.id WHERE m.chat_id = ? GROUP BY r.message_id",
            (chat_id,),
        )
    )
    shown: list[Any] = []
    current: int | None = None
    for row in rows:
        if row["after_reply_id"] is not None and row["after_reply_id"] != current:
            continue
        shown.append(row)
        if row["id"] in first:
            branch = row["branch_id"]
            current = int(branch) if branch is not None else int(first[row["id"]])
    return shown, current


def _followed(branches: tuple[ReplyRecord, ...], branch_id: int | None) -> ReplyRecord | None:
    """The branch a turn's conversation follows: `branch_id`, else its first."""
    for branch in branches:
        if branch.id == branch_id:
            return branch
    return branches[0] if branches else None


def _load_replies(
    conn: sqlite3.Connection,
    path: Path,
    chat_id: int,
    shown: set[int],
    after: dict[int, int | None],
    registry: Registry,
) -> dict[int, tuple[ReplyRecord, ...]]:
    """Every branch of the replies of a chat's turns, keyed by message id, oldest
    first per turn.

    A turn's branches share its number (`ReplyRecord.number`): its place among the
    generated turns on screen (`shown`), or for a turn off screen, among those of
    the continuation it is on (following `after`, each turn's `after_reply_id`).
    `branch` numbers a turn's branches.
    """
    rows = _named_rows(
        conn,
        f"SELECT {select_list('r', text='coalesce(r.text, m.content)')} "
        "FROM replies r JOIN messages m ON r.message_id = m.id "
        "WHERE m.chat_id = ? ORDER BY m.position, r.id",
        (chat_id,),
    )
    replies: dict[int, tuple[ReplyRecord, ...]] = {}
    turn_of: dict[int, int] = {}  # reply id -> its message id
    numbers: dict[int, int] = {}  # message id -> its reply number
    for row in rows:
        stored = reply_fields(row)
        reply_id, message_id = int(stored["id"]), int(stored["message_id"])
        turn_of[reply_id] = message_id
        if message_id not in numbers:
            numbers[message_id] = _number(message_id, shown, after, turn_of, numbers)
        token_rows = conn.execute(
            "SELECT token_id, piece FROM reply_tokens WHERE reply_id = ? ORDER BY idx",
            (reply_id,),
        ).fetchall()
        read = [
            (int(c[0]), parse_stored_settings(path, str(c[1]), reply_id, registry))
            for c in conn.execute(
                "SELECT from_index, settings FROM settings_changes WHERE reply_id = ? "
                "ORDER BY from_index",
                (reply_id,),
            )
        ]
        changes = tuple(SettingsChange(at, got.settings, got.unknown) for at, got in read)
        problems = [got.problem for _, got in read if got.problem is not None]
        if not changes:
            raise StoreError(f"chat database {path}: reply {reply_id} has no settings recorded")
        if stored["finished"] is None:
            stored["text"] = _so_far(stored["text"], token_rows)
        siblings = replies.get(message_id, ())
        record = ReplyRecord(
            **stored,
            number=numbers[message_id],
            token_ids=tuple(int(t[0]) for t in token_rows),
            settings_changes=changes,
            branch=len(siblings) + 1,
            replay_problem=problems[0] if problems else None,
        )
        replies[message_id] = (*siblings, record)
    return replies


def _so_far(start: str, token_rows: list[Any]) -> str:
    """An unfinished reply's text: its start (a branch's shared text; for replies of
    schema 4 and earlier, the text kept so far) and each stored token's piece."""
    return start + "".join(str(piece) for _, piece in token_rows if piece is not None)


def reply_text(conn: sqlite3.Connection, reply_id: int) -> str:
    """A reply's text: as written when it finished, else built from its tokens so far."""
    row = conn.execute(
        "SELECT coalesce(r.text, m.content), r.finished FROM replies r "
        "JOIN messages m ON r.message_id = m.id WHERE r.id = ?",
        (reply_id,),
    ).fetchone()
    if row is None:
        return ""
    if row[1] is not None:
        return str(row[0])
    pieces = conn.execute(
        "SELECT idx, piece FROM reply_tokens WHERE reply_id = ? ORDER BY idx", (reply_id,)
    ).fetchall()
    return _so_far(str(row[0]), pieces)


def _number(
    message_id: int,
    shown: set[int],
    after: dict[int, int | None],
    turn_of: dict[int, int],
    numbers: dict[int, int],
) -> int:
    """The reply number of a generated turn (the turns before it numbered already)."""
    if message_id in shown:
        return 1 + sum(1 for turn in numbers if turn in shown)
    previous = after.get(message_id)
    if previous is None or previous not in turn_of:
        return 1
    return numbers[turn_of[previous]] + 1


def load_steps(conn: sqlite3.Connection, path: Path, reply: ReplyRecord) -> dict[int, Step]:
    """The stored per-token records of one branch, by token index.

    A branch holds rows from its fork on; the tokens before are its parent's (load
    them from the parent). Replies recorded before per-token records existed have
    none.

    Raises:
        StoreError: A row cannot be read.
    """
    row = conn.execute("SELECT step_layout FROM replies WHERE id = ?", (reply.id,)).fetchone()
    if row is None or row[0] is None:
        return {}
    try:
        layout = StepLayout.from_json(str(row[0]))
        return {
            int(idx): unpack_step(
                str(scalars),
                _packed(blob),
                layout,
                reply.settings_at(int(idx)),
                None if reports is None else str(reports),
            )
            for idx, scalars, blob, reports in conn.execute(
                "SELECT idx, scalars, arrays, reports FROM reply_steps WHERE reply_id = ?"
                " ORDER BY idx",
                (reply.id,),
            )
        }
    except (ValueError, TypeError, KeyError) as error:
        raise StoreError(
            f"chat database {path}: reply {reply.id} has unreadable token records: {error}"
        ) from error


def _packed(blob: object) -> bytes:
    """A step's packed arrays as stored; anything else (an integer, which `bytes()`
    would make that many zero bytes of) refused.

    Raises:
        TypeError: The column holds no blob.
    """
    if not isinstance(blob, bytes):
        raise TypeError(f"a step's arrays are a {type(blob).__name__}, not packed bytes")
    return blob
