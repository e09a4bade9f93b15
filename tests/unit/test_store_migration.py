"""A database made by schema version 1 is migrated to the current version."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from backend.store.schema import SCHEMA_VERSION
from backend.store.store import ChatStore
from sampling.settings import SamplerSettings

# The version-1 schema as it shipped, written out here on purpose: the test must keep
# describing the old format even when the code's migrations change.
V1_SCHEMA = """
CREATE TABLE chats (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL,
    created REAL NOT NULL,
    model_path TEXT, model_size INTEGER, model_sha256 TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_id INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content TEXT NOT NULL, created REAL NOT NULL, UNIQUE (chat_id, position));
CREATE TABLE replies (id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id INTEGER NOT NULL UNIQUE REFERENCES messages(id) ON DELETE CASCADE,
    model_path TEXT NOT NULL, model_size INTEGER NOT NULL, model_sha256 TEXT NOT NULL,
    seed TEXT NOT NULL, rng TEXT NOT NULL, max_tokens INTEGER, finish_reason TEXT,
    error TEXT, stats TEXT, created REAL NOT NULL, finished REAL);
CREATE TABLE reply_tokens (reply_id INTEGER NOT NULL REFERENCES replies(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL, token_id INTEGER NOT NULL, PRIMARY KEY (reply_id, idx)) WITHOUT ROWID;
CREATE TABLE settings_changes (
    reply_id INTEGER NOT NULL REFERENCES replies(id) ON DELETE CASCADE,
    from_index INTEGER NOT NULL, settings TEXT NOT NULL,
    PRIMARY KEY (reply_id, from_index)) WITHOUT ROWID;
PRAGMA user_version = 1;
"""

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC).timestamp()


def make_v1_database(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(V1_SCHEMA)
    settings = json.dumps(SamplerSettings(seed=3).to_dict())
    conn.executescript(f"""
        INSERT INTO chats VALUES (1, 'old chat', {T0}, '/m.gguf', 10, 'aa');
        INSERT INTO messages VALUES (1, 1, 0, 'user', 'hello', {T0 + 60});
        INSERT INTO messages VALUES (2, 1, 1, 'assistant', 'hi there', {T0 + 120});
        INSERT INTO replies VALUES (1, 2, '/m.gguf', 10, 'aa', '3', 'pcg64', 64, 'eos',
            NULL, '{{"decode_tokens": 2}}', {T0 + 61}, {T0 + 120});
        INSERT INTO reply_tokens VALUES (1, 0, 100), (1, 1, 101);
        INSERT INTO settings_changes VALUES (1, 0, '{settings}');
        INSERT INTO chats VALUES (2, 'empty chat', {T0 + 30}, NULL, NULL, NULL);
    """)
    conn.commit()
    conn.close()


def test_v1_database_is_migrated_and_readable(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    make_v1_database(path)
    with ChatStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 2
        chats = store.list_chats()
        # chats.updated was backfilled: the newest message, else the creation time.
        assert [(c.id, c.updated.timestamp()) for c in chats] == [(1, T0 + 120), (2, T0 + 30)]
        record = store.load_chat(1)
        reply = record.replies[0]
        assert reply.token_ids == (100, 101) and reply.text == "hi there"
        assert reply.settings_at(0) == SamplerSettings(seed=3)
        assert reply.stats is not None and reply.stats.decode_tokens == 2
        # v2 features work on the migrated file.
        model = tmp_path / "x.gguf"
        model.write_bytes(b"GGUF")
        store.model_ref(model)
        store.add_message(1, "user", "again")
        assert len(store.load_chat(1).messages) == 3


def test_migration_runs_once(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    make_v1_database(path)
    ChatStore(path).close()
    with ChatStore(path) as store:  # reopening an already-migrated file is a no-op
        assert store.schema_version == SCHEMA_VERSION
        assert len(store.list_chats()) == 2
