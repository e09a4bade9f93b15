"""The schema: `schema.sql` is a new database's, and every earlier version migrates to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from backend.store.schema import SCHEMA_VERSION, migrate
from backend.store.schema_text import SCHEMA_FILE, fresh_schema, normalised, schema_of
from backend.store.store import ChatStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "store"
VERSIONS = (1, 2, 3, 4)


def fresh(tmp_path: Path) -> sqlite3.Connection:
    path = tmp_path / "fresh.sqlite3"
    ChatStore(path).close()
    return sqlite3.connect(path)


def old_database(version: int, path: Path) -> sqlite3.Connection:
    """A database written at schema `version` (see tests/fixtures/store/README.md)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript((FIXTURES / f"v{version}.sql").read_text(encoding="utf-8"))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == version
    return conn


def structure(conn: sqlite3.Connection) -> dict[str, object]:
    """Every table's columns, foreign keys and indexes as SQLite reports them."""
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {
        table: (
            conn.execute(f"PRAGMA table_xinfo({table})").fetchall(),
            conn.execute(f"PRAGMA foreign_key_list({table})").fetchall(),
            sorted(conn.execute(f"PRAGMA index_list({table})").fetchall()),
        )
        for table in sorted(tables)
    }


def test_schema_sql_is_a_new_databases_schema(tmp_path: Path) -> None:
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    assert text == fresh_schema(), "run backend.store.schema_text.write_schema_file()"
    conn = fresh(tmp_path)
    assert normalised(text.rsplit("PRAGMA", 1)[0]) == normalised(schema_of(conn))
    assert f"PRAGMA user_version = {SCHEMA_VERSION};" in text


@pytest.mark.parametrize("version", VERSIONS)
def test_a_migrated_database_equals_a_new_one(version: int, tmp_path: Path) -> None:
    conn = old_database(version, tmp_path / "old.sqlite3")
    migrate(conn)
    new = fresh(tmp_path)
    assert normalised(schema_of(conn)) == normalised(schema_of(new))
    assert structure(conn) == structure(new)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


@pytest.mark.parametrize("version", VERSIONS)
def test_the_rebuilt_messages_keep_their_ids_rows_and_counter(version: int, tmp_path: Path) -> None:
    conn = old_database(version, tmp_path / "old.sqlite3")
    columns = "id, chat_id, position, role, content, created"
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("DELETE FROM messages WHERE position = 3")  # the newest id is gone
    before = conn.execute(f"SELECT {columns} FROM messages ORDER BY id").fetchall()
    counter = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
    assert counter == (4,) and before[-1][0] == 3
    migrate(conn)
    assert conn.execute(f"SELECT {columns} FROM messages ORDER BY id").fetchall() == before
    conn.close()
    with ChatStore(tmp_path / "old.sqlite3") as store:
        assert store.add_message(1, "user", "again") == 5  # ids are never reused


def test_branch_and_after_reply_reference_replies(tmp_path: Path) -> None:
    conn = fresh(tmp_path)
    keys = {
        (row[3], row[2], row[4], row[6])
        for row in conn.execute("PRAGMA foreign_key_list(messages)")
    }
    assert keys == {
        ("chat_id", "chats", "id", "CASCADE"),
        ("branch_id", "replies", "id", "SET NULL"),
        ("after_reply_id", "replies", "id", "SET NULL"),
    }
    conn.close()
    with ChatStore(tmp_path / "fresh.sqlite3") as store:
        chat = store.new_chat("c")
        store.add_message(chat, "user", "hi")
        with pytest.raises(Exception, match="FOREIGN KEY"), store._transaction("x") as inner:
            inner.execute("UPDATE messages SET branch_id = 99 WHERE chat_id = ?", (chat,))


def test_references_to_replies_that_are_gone_become_null(tmp_path: Path) -> None:
    conn = old_database(4, tmp_path / "old.sqlite3")
    conn.execute("UPDATE messages SET branch_id = 77 WHERE position = 1")
    conn.execute("UPDATE messages SET after_reply_id = 78 WHERE position = 2")
    migrate(conn)
    rows = conn.execute("SELECT position, branch_id, after_reply_id FROM messages").fetchall()
    assert (1, None, None) in rows and (2, None, None) in rows
