"""A database made by schema version 1 is migrated to the current version."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from backend.store.schema import SCHEMA_VERSION, migrate
from backend.store.store import ChatStore, Fork
from sampling.settings.record import SamplerSettings

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
        assert store.schema_version == SCHEMA_VERSION == 11
        chats = store.list_chats()
        # chats.updated was backfilled: the newest message, else the creation time.
        assert [(c.id, c.updated.timestamp()) for c in chats] == [(1, T0 + 120), (2, T0 + 30)]
        assert store.list_history() == chats  # a sample of no kept sweep: a chat of its own
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


def make_v2_database(path: Path) -> None:
    """A database as version 2 wrote it: the v1 file migrated by the real migrations,
    plus a second turn with a v2 reply (n_ctx, n_batch)."""
    make_v1_database(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    migrate(conn, target=2)
    settings = json.dumps(SamplerSettings(seed=5, top_k=3).to_dict())
    for statement in f"""
        INSERT INTO messages VALUES (3, 1, 2, 'user', 'more', {T0 + 200});
        INSERT INTO messages VALUES (4, 1, 3, 'assistant', 'sure', {T0 + 260});
        INSERT INTO replies (id, message_id, model_path, model_size, model_sha256, seed, rng,
            max_tokens, finish_reason, created, finished, n_ctx, n_batch)
            VALUES (2, 4, '/m.gguf', 10, 'aa', '5', 'pcg64', 8, 'max_tokens', {T0 + 201},
            {T0 + 260}, 2048, 64);
        INSERT INTO reply_tokens VALUES (2, 0, 7), (2, 1, 8), (2, 2, 9);
        INSERT INTO settings_changes VALUES (2, 0, '{settings}')
    """.split(";"):
        conn.execute(statement)
    conn.close()


def test_v2_database_is_migrated_with_its_replies_as_tree_roots(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    make_v2_database(path)
    with ChatStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 11
        chat = store.load_chat(1)
        first, second = chat.replies
        assert (first.token_ids, first.text, first.number) == ((100, 101), "hi there", 1)
        assert (second.token_ids, second.text, second.number) == ((7, 8, 9), "sure", 2)
        assert (second.n_ctx, second.n_batch, second.max_tokens) == (2048, 64, 8)
        assert second.settings_at(2) == SamplerSettings(seed=5, top_k=3)
        assert [m.branches for m in chat.messages if m.role == "assistant"] == [
            (first,),
            (second,),
        ]
        assert (second.parent_id, second.fork_at, second.mode) == (None, None, "chat")
        assert store.load_steps(chat, second) == {}  # no per-token records before v3
        # v3 features work on the migrated file: a branch of the old reply.
        writer = store.begin_reply(
            1, second.model, SamplerSettings(seed=1), fork=Fork(second, 1, "su")
        )
        writer.append_token(1, 42, SamplerSettings(seed=1), "n")
        writer.finish("eos", None, "sun")
        again = store.load_chat(1)
        assert again.replies[1].token_ids == (7, 42)
        assert again.messages[-1].content == "sun"
        # The v1/v2 rows were carried over, not cascaded away by the table rebuild.
        assert again.replies[0].token_ids == (100, 101)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("SELECT count(*) FROM settings_changes").fetchone()[0] == 3
    conn.close()


def test_v3_turns_get_the_branch_they_followed(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    make_v2_database(path)
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, target=3)
    conn.close()
    with ChatStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 11
        conn = sqlite3.connect(path)
        after = conn.execute(
            "SELECT id, after_reply_id FROM messages WHERE chat_id = 1 ORDER BY position"
        ).fetchall()
        conn.close()
        # Reply 1 (id 1) is followed by the second turn; nothing comes before the first.
        assert after[:4] == [(1, None), (2, None), (3, 1), (4, 1)]
        assert [m.content for m in store.load_chat(1).messages][2:] == ["more", "sure"]
