"""The chat database's schema and its migrations (PRAGMA user_version).

Every database starts at version 0 (empty) and is brought to `SCHEMA_VERSION` by
running each migration in order, each in its own transaction together with the new
`user_version`, so a crash mid-migration leaves the previous version intact. A new
database therefore takes the same path as an old one: v0 → v1 → … → v9.

Version history:
    1: chats, messages, replies, reply_tokens, settings_changes.
    2: chats.updated (backfilled from the newest message, else the chat's creation),
       an index on it for the history list, the model_files hash cache, and
       replies.n_ctx / replies.n_batch (the context and prefill chunk size a reply
       ran with: exact replay needs them; NULL for v1 replies).
    3: branches and per-token records. `replies` is rebuilt without UNIQUE on
       message_id: a turn holds a tree of replies (branches), each with parent_id
       (NULL for the turn's first reply) and fork_at (the token index where it leaves
       its parent: tokens before it are the parent's), the mode it ran in ("chat" or
       "completion") and step_layout (how its reply_steps rows are packed; NULL: no
       rows) and text (its own text: NULL for older replies, whose text is the
       message's). messages.branch_id names the branch the conversation follows (NULL: the
       turn's first reply). reply_steps holds each sampled token's record (see
       `backend.store.steps`).
    4: messages.after_reply_id: the branch of the chat's previous generated turn a
       turn was added after (NULL: no generated turn before it). A chat shows the turns
       along the branches it follows, so a branch made from an earlier reply starts a
       new continuation while the turns after the old branch stay stored under it.
       Backfilled from the branches each turn followed.
    5: every stored settings JSON names the exact order its reply ran with: `samplers`
       is rewritten to the order the rule before version 5 ran (that rule placed the
       temperature by comparing `samplers` with the list of known names, so adding a
       name would have changed how old replies replay; the list is frozen in
       `backend.store.past_orders`). replies.decoding: how the reply was decoded, as JSON
       (e.g. in lockstep with which sibling sequences); NULL means decoded alone, one
       sequence — every reply before version 5. reply_tokens.piece: the text each
       token added, so storing a token is one new row: a reply's text is written
       when it finishes, and an unfinished reply's is its text at the start (a
       branch's shared text; for replies of earlier versions, the text kept so far)
       followed by the pieces (NULL for tokens stored before version 5 or copied
       from a parent). `messages` is rebuilt (ids and rows kept) so that branch_id
       and after_reply_id reference replies(id), ON DELETE SET NULL; references to
       replies that no longer exist become NULL.
    6: replies.loop: the latest repetition loop found in the reply while it ran, as
       JSON `{"period", "start", "count"}` (`sampling.analysis.loops.Loop`); NULL: none found,
       not watched for, or a reply of an earlier version.
    7: an order runs exactly as stored. Before, the chain moved smoothing right after
       the temperature and adaptive-p to the end wherever the order named them; each
       stored `samplers` is rewritten to the order that ran (`backend.store.past_orders`).
    8: reply_steps.reports: what each unit reported of the step, as JSON by unit name
       (`sampling.records.Step.reports`); NULL: none reported, or a row of an earlier
       version, whose layout named those figures as fields (`backend.store.steps`).
    9: replies.control_vectors (the control vectors its model applied, as JSON) and
       replies.contrast_model_path / _size / _sha256 (the smaller model it was
       contrasted with): a replay loads them; NULL: none, or a reply of an earlier
       version.
    10: sweeps: a finished sweep's result (`sweep --json`'s object), its title and
        model; chats.sweep_id names the sweep a chat is a sample of (NULL: a chat of its
        own, and every chat of an earlier version), so that the saved chats list a sweep
        as one entry (`backend.store.sweeps`).
    11: replies.template_switches: the chat template's switches the reply was rendered
        with (`--chat-template-kwargs`, `--reasoning-effort`, `--reasoning-preserve`, as
        JSON); NULL: none set, or a reply of an earlier version. Replay, what-if and
        branch render the prompt with them.

The current schema is written out in `schema.sql` (a test checks it against a new
database and against databases migrated from each earlier version). A new stored
reply field is its `ReplyRecord` field and one migration line here,
`N: "ALTER TABLE replies ADD COLUMN name TYPE"`: its column, its codec and the
reads and writes of `replies` come from the record (`backend.store.reply_row`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from backend.store.past_orders import order_before_v5, order_before_v7, rewrite_orders

SCHEMA_VERSION = 11

_V1 = """
CREATE TABLE chats (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
    title TEXT NOT NULL,
    created REAL NOT NULL,                -- unix seconds, UTC
    model_path TEXT,
    model_size INTEGER,
    model_sha256 TEXT
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
    chat_id INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,            -- 0-based order within the chat
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content TEXT NOT NULL,                -- for a reply: its text so far, then final
    created REAL NOT NULL,
    UNIQUE (chat_id, position)
);
CREATE TABLE replies (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
    message_id INTEGER NOT NULL UNIQUE REFERENCES messages(id) ON DELETE CASCADE,
    model_path TEXT NOT NULL,
    model_size INTEGER NOT NULL,
    model_sha256 TEXT NOT NULL,
    seed TEXT NOT NULL,                   -- decimal: seeds reach 2**64-1 > INTEGER
    rng TEXT NOT NULL,
    max_tokens INTEGER,
    finish_reason TEXT,                   -- NULL until finished (killed: interrupted)
    error TEXT,
    stats TEXT,                           -- JSON of GenerationStats
    created REAL NOT NULL,
    finished REAL
);
CREATE TABLE reply_tokens (
    reply_id INTEGER NOT NULL REFERENCES replies(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    token_id INTEGER NOT NULL,
    PRIMARY KEY (reply_id, idx)
) WITHOUT ROWID;
CREATE TABLE settings_changes (
    reply_id INTEGER NOT NULL REFERENCES replies(id) ON DELETE CASCADE,
    from_index INTEGER NOT NULL,          -- in force from this token index on
    settings TEXT NOT NULL,               -- JSON of SamplerSettings.to_dict()
    PRIMARY KEY (reply_id, from_index)
) WITHOUT ROWID;
"""

_V2 = """
ALTER TABLE chats ADD COLUMN updated REAL NOT NULL DEFAULT 0;
UPDATE chats SET updated = coalesce(
    (SELECT max(messages.created) FROM messages WHERE messages.chat_id = chats.id),
    chats.created
);
CREATE INDEX chats_by_updated ON chats(updated);
ALTER TABLE replies ADD COLUMN n_ctx INTEGER;
ALTER TABLE replies ADD COLUMN n_batch INTEGER;
CREATE TABLE model_files (
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (path, size, mtime_ns)
) WITHOUT ROWID;
"""


_V3 = """
CREATE TABLE replies_v3 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    parent_id INTEGER REFERENCES replies(id) ON DELETE CASCADE,
    fork_at INTEGER,                      -- tokens [0, fork_at) are the parent's
    mode TEXT NOT NULL DEFAULT 'chat',    -- 'chat' or 'completion'
    model_path TEXT NOT NULL,
    model_size INTEGER NOT NULL,
    model_sha256 TEXT NOT NULL,
    seed TEXT NOT NULL,
    rng TEXT NOT NULL,
    max_tokens INTEGER,
    finish_reason TEXT,
    error TEXT,
    stats TEXT,
    created REAL NOT NULL,
    finished REAL,
    n_ctx INTEGER,
    n_batch INTEGER,
    step_layout TEXT,                     -- JSON: how reply_steps rows are packed
    text TEXT                             -- the reply's text (NULL: the message's)
);
INSERT INTO replies_v3 (id, message_id, model_path, model_size, model_sha256, seed, rng,
    max_tokens, finish_reason, error, stats, created, finished, n_ctx, n_batch)
    SELECT id, message_id, model_path, model_size, model_sha256, seed, rng, max_tokens,
        finish_reason, error, stats, created, finished, n_ctx, n_batch FROM replies;
DROP TABLE replies;
ALTER TABLE replies_v3 RENAME TO replies;
CREATE INDEX replies_by_message ON replies(message_id);
CREATE INDEX replies_by_parent ON replies(parent_id);
ALTER TABLE messages ADD COLUMN branch_id INTEGER;
CREATE TABLE reply_steps (
    reply_id INTEGER NOT NULL REFERENCES replies(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    scalars TEXT NOT NULL,                -- JSON list, in step_layout's order
    arrays BLOB NOT NULL,                 -- the candidate table's columns, packed
    PRIMARY KEY (reply_id, idx)
) WITHOUT ROWID;
"""


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    # executescript() would COMMIT first; run statement by statement instead so the
    # whole migration stays inside the caller's transaction.
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _v4(conn: sqlite3.Connection) -> None:
    """Add messages.after_reply_id; each turn follows the branch its chat showed before it."""
    conn.execute("ALTER TABLE messages ADD COLUMN after_reply_id INTEGER")
    first = dict(conn.execute("SELECT message_id, min(id) FROM replies GROUP BY message_id"))
    current: dict[int, int] = {}  # chat id -> the branch its last generated turn follows
    rows = conn.execute(
        "SELECT id, chat_id, branch_id FROM messages ORDER BY chat_id, position"
    ).fetchall()
    for message_id, chat_id, branch_id in rows:
        if chat_id in current:
            conn.execute(
                "UPDATE messages SET after_reply_id = ? WHERE id = ?",
                (current[chat_id], message_id),
            )
        if message_id in first:
            current[chat_id] = branch_id if branch_id is not None else first[message_id]


_V5_MESSAGES = """
CREATE TABLE messages_v5 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
    chat_id INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,            -- 0-based order within the chat
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content TEXT NOT NULL,                -- a reply's: its followed branch's, once finished
    created REAL NOT NULL,
    branch_id INTEGER REFERENCES replies(id) ON DELETE SET NULL,  -- NULL: the first reply
    after_reply_id INTEGER REFERENCES replies(id) ON DELETE SET NULL,
    UNIQUE (chat_id, position)
);
UPDATE messages SET branch_id = NULL WHERE branch_id NOT IN (SELECT id FROM replies);
UPDATE messages SET after_reply_id = NULL
    WHERE after_reply_id NOT IN (SELECT id FROM replies);
INSERT INTO messages_v5 (id, chat_id, position, role, content, created, branch_id,
    after_reply_id)
    SELECT id, chat_id, position, role, content, created, branch_id, after_reply_id
    FROM messages;
DROP TABLE messages;
ALTER TABLE messages_v5 RENAME TO messages;
ALTER TABLE reply_tokens ADD COLUMN piece TEXT;
ALTER TABLE replies ADD COLUMN decoding TEXT
"""


def _v5(conn: sqlite3.Connection) -> None:
    """Write each stored order as it ran; add replies.decoding and reply_tokens.piece;
    rebuild messages with its references to replies."""
    rewrite_orders(conn, order_before_v5)
    # Message ids are never reused: the rebuilt table keeps the old one's counter.
    sequence = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
    _run_script(conn, _V5_MESSAGES)
    if sequence is not None:
        conn.execute("DELETE FROM sqlite_sequence WHERE name = 'messages'")
        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('messages', ?)", sequence)


_V10 = """
CREATE TABLE sweeps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
    title TEXT NOT NULL,
    created REAL NOT NULL,                -- unix seconds, UTC: when it was kept
    model_path TEXT NOT NULL,
    result TEXT NOT NULL                  -- JSON: the result as `sweep --json` prints it
);
ALTER TABLE chats ADD COLUMN sweep_id INTEGER REFERENCES sweeps(id) ON DELETE SET NULL;
CREATE INDEX chats_by_sweep ON chats(sweep_id)"""


Migration = str | Callable[[sqlite3.Connection], None]
"""A migration: a script of SQL statements, or a step in Python."""

MIGRATIONS: dict[int, Migration] = {
    1: _V1,
    2: _V2,
    3: _V3,
    4: _v4,
    5: _v5,
    6: "ALTER TABLE replies ADD COLUMN loop TEXT",
    7: lambda conn: rewrite_orders(conn, order_before_v7),
    8: "ALTER TABLE reply_steps ADD COLUMN reports TEXT",
    9: """
ALTER TABLE replies ADD COLUMN control_vectors TEXT;
ALTER TABLE replies ADD COLUMN contrast_model_path TEXT;
ALTER TABLE replies ADD COLUMN contrast_model_size INTEGER;
ALTER TABLE replies ADD COLUMN contrast_model_sha256 TEXT;
""",
    10: _V10,
    11: "ALTER TABLE replies ADD COLUMN template_switches TEXT",
}
"""Migration to version N (from N - 1)."""


def schema_version(conn: sqlite3.Connection) -> int:
    """The database's PRAGMA user_version."""
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def check_integrity(conn: sqlite3.Connection) -> None:
    """Refuse a damaged file before anything (even the journal mode) is written to it.

    `PRAGMA quick_check` reads every page (not the indexes' contents), so garbage in
    the middle of a file that opens fine is found too; a new, empty file passes.

    Raises:
        sqlite3.Error: The file cannot be read at all (not a database, malformed).
        ValueError: SQLite found damage (its first complaint is in the message).
    """
    rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    first = str(rows[0][0]) if rows else "ok"
    if first != "ok":
        problem = " ".join(first.replace("*** in database main ***", "").split())
        raise ValueError(
            f"it is corrupt ({problem}); move it aside and samplescope starts a new one"
        )


def open_database(conn: sqlite3.Connection) -> None:
    """Check a just-opened file, set the connection's pragmas and migrate it.

    Raises:
        sqlite3.Error: The file cannot be read or written.
        ValueError: It is damaged, or newer than this samplescope (see `migrate`).
    """
    check_integrity(conn)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    migrate(conn)


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring the database up to `target`; returns the version it started at.

    The connection must be in autocommit mode (isolation_level=None). Each step
    re-reads the version inside its write transaction, so two processes opening an
    old database at once migrate it only once.

    Raises:
        sqlite3.Error: The database cannot be read or written.
        ValueError: The database is newer than this code knows (its version is in
            the message).
    """
    start = schema_version(conn)
    if start < 0:  # the header's version field damaged, or another program's file
        raise ValueError(
            f"its schema version is {start}, which samplescope never writes; move it aside"
            " and samplescope starts a new one"
        )
    if start > SCHEMA_VERSION:
        raise ValueError(
            f"its schema version is {start}, newer than this samplescope knows "
            f"({SCHEMA_VERSION}); upgrade samplescope"
        )
    # Rebuilding a table (version 3) must not cascade deletes through the tables that
    # reference it: foreign keys are off while migrating (the pragma is a no-op inside
    # a transaction, so it is set here) and checked before each commit.
    enforced = int(conn.execute("PRAGMA foreign_keys").fetchone()[0])
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        _migrate_steps(conn, start, target)
    finally:
        conn.execute(f"PRAGMA foreign_keys = {enforced}")
    return start


def _migrate_steps(conn: sqlite3.Connection, start: int, target: int) -> None:
    for version in range(start + 1, target + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            if schema_version(conn) >= version:
                conn.execute("COMMIT")
                continue
            step = MIGRATIONS[version]
            if isinstance(step, str):
                _run_script(conn, step)
            else:
                step(conn)
            broken = conn.execute("PRAGMA foreign_key_check").fetchone()
            if broken is not None:
                raise sqlite3.IntegrityError(f"migration {version} broke a reference: {broken}")
            conn.execute(f"PRAGMA user_version = {int(version)}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
