"""Kept sweeps: a finished sweep's result in the chat database, and the saved chats'
list with each sweep as one entry.

A sweep's samples are chats of their own (each opens in the app with its records);
`chats.sweep_id` names the sweep a chat is a sample of, and the `sweeps` row holds
the result (`sweep --json`'s object, as text: the store does not read it), from
which the app draws the sweep's frontier again without running it. A sweep whose
process died before it finished was never kept: its samples stay chats of their
own, as every sample saved before sweeps were kept does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from backend.store.records import ChatSummary, StoreError


@dataclass(frozen=True, slots=True)
class SweepSummary:
    """One sweep's line in the saved chats' list.

    Attributes:
        id: The sweep's id.
        title: Its title ("sweep · 3 settings × 4 samples · Write a…").
        updated: When it or one of its samples last changed.
        model_path: The model it ran.
        samples: How many of its samples are saved chats.
    """

    id: int
    title: str
    updated: datetime
    model_path: str
    samples: int

    @property
    def model_name(self) -> str:
        """The model's file name."""
        return Path(self.model_path).name


HistoryEntry = ChatSummary | SweepSummary
"""A line of the saved chats' list: a chat, or a sweep standing for its samples."""


def keep_sweep(
    conn: sqlite3.Connection,
    title: str,
    model_path: str,
    result: str,
    chat_ids: Sequence[int],
    now: float,
) -> int:
    """Insert a sweep and make `chat_ids` its samples (in the caller's transaction);
    returns its id."""
    cursor = conn.execute(
        "INSERT INTO sweeps (title, created, model_path, result) VALUES (?, ?, ?, ?)",
        (title, now, model_path, result),
    )
    sweep_id = int(cursor.lastrowid or 0)
    conn.executemany(
        "UPDATE chats SET sweep_id = ? WHERE id = ?", [(sweep_id, c) for c in chat_ids]
    )
    return sweep_id


def sweep_result(conn: sqlite3.Connection, path: Path, sweep_id: int) -> str:
    """A kept sweep's result, as stored (JSON text).

    Raises:
        StoreError: There is no such sweep.
    """
    row = conn.execute("SELECT result FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
    if row is None:
        raise StoreError(f"chat database {path} has no sweep {sweep_id}")
    return str(row[0])


def delete_sweep(conn: sqlite3.Connection, path: Path, sweep_id: int) -> None:
    """Delete a sweep and its samples' chats (in the caller's transaction).

    Raises:
        StoreError: There is no such sweep.
    """
    conn.execute("DELETE FROM chats WHERE sweep_id = ?", (sweep_id,))
    if conn.execute("DELETE FROM sweeps WHERE id = ?", (sweep_id,)).rowcount == 0:
        raise StoreError(f"chat database {path} has no sweep {sweep_id}")


def history(conn: sqlite3.Connection, chats: Sequence[ChatSummary]) -> list[HistoryEntry]:
    """The saved chats' list from the chats listed (newest first): each sweep's
    samples folded into one entry, placed as its newest sample listed."""
    sweeps = {chat.sweep_id for chat in chats if chat.sweep_id is not None}
    if not sweeps:
        return list(chats)
    marks = ", ".join("?" for _ in sweeps)
    rows = conn.execute(
        f"SELECT s.id, s.title, s.model_path, (SELECT count(*) FROM chats c"
        f" WHERE c.sweep_id = s.id) FROM sweeps s WHERE s.id IN ({marks})",
        tuple(sweeps),
    ).fetchall()
    found = {int(row[0]): row for row in rows}
    entries: list[HistoryEntry] = []
    shown: set[int] = set()
    for chat in chats:
        if chat.sweep_id is None or chat.sweep_id not in found:
            entries.append(chat)
        elif chat.sweep_id not in shown:
            shown.add(chat.sweep_id)
            _, title, model_path, samples = found[chat.sweep_id]
            entries.append(
                SweepSummary(chat.sweep_id, str(title), chat.updated, str(model_path), samples)
            )
    return entries
