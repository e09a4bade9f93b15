-- The chat database's schema at version 11 (PRAGMA user_version), as a
-- new database gets it by running every migration in backend/store/schema.py. Written
-- by backend.store.schema_text.write_schema_file; a test checks it against a new one.

CREATE TABLE chats (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
    title TEXT NOT NULL,
    created REAL NOT NULL,                -- unix seconds, UTC
    model_path TEXT,
    model_size INTEGER,
    model_sha256 TEXT
, updated REAL NOT NULL DEFAULT 0, sweep_id INTEGER REFERENCES sweeps(id) ON DELETE SET NULL);

CREATE TABLE "messages" (
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

CREATE TABLE model_files (
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (path, size, mtime_ns)
) WITHOUT ROWID;

CREATE TABLE "replies" (
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
, decoding TEXT, loop TEXT, control_vectors TEXT, contrast_model_path TEXT, contrast_model_size INTEGER, contrast_model_sha256 TEXT, template_switches TEXT);

CREATE TABLE reply_steps (
    reply_id INTEGER NOT NULL REFERENCES replies(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    scalars TEXT NOT NULL,                -- JSON list, in step_layout's order
    arrays BLOB NOT NULL, reports TEXT,                 -- the candidate table's columns, packed
    PRIMARY KEY (reply_id, idx)
) WITHOUT ROWID;

CREATE TABLE reply_tokens (
    reply_id INTEGER NOT NULL REFERENCES replies(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    token_id INTEGER NOT NULL, piece TEXT,
    PRIMARY KEY (reply_id, idx)
) WITHOUT ROWID;

CREATE TABLE settings_changes (
    reply_id INTEGER NOT NULL REFERENCES replies(id) ON DELETE CASCADE,
    from_index INTEGER NOT NULL,          -- in force from this token index on
    settings TEXT NOT NULL,               -- JSON of SamplerSettings.to_dict()
    PRIMARY KEY (reply_id, from_index)
) WITHOUT ROWID;

CREATE TABLE sqlite_sequence(name,seq);

CREATE TABLE sweeps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
    title TEXT NOT NULL,
    created REAL NOT NULL,                -- unix seconds, UTC: when it was kept
    model_path TEXT NOT NULL,
    result TEXT NOT NULL                  -- JSON: the result as `sweep --json` prints it
);

CREATE INDEX chats_by_sweep ON chats(sweep_id);

CREATE INDEX chats_by_updated ON chats(updated);

CREATE INDEX replies_by_message ON replies(message_id);

CREATE INDEX replies_by_parent ON replies(parent_id);

PRAGMA user_version = 11;
