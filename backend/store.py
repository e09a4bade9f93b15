"""Saved chats: a SQLite database (WAL mode) written as the chat happens.

One `ChatStore` wraps one connection. Every public method holds the store's lock, so
the generation thread may write tokens while the UI thread reads the chat list; the
connection is opened with `check_same_thread=False` for that reason.

Durability: `ReplyWriter.append_token` commits each token in its own transaction,
together with the reply's growing text (kept in the assistant message's `content`).
In WAL mode with synchronous=NORMAL a commit is in the OS's hands once it returns, so
killing the process mid-reply loses at most the token in flight (a power cut may lose
the last few commits, never corrupt the file). A reply that never reached `finish`
loads with finish reason "interrupted" and its text so far — no detokenizer is needed
to read a chat back.

Typical use (see `ChatStore.begin_reply`):

    store = ChatStore()                        # <data dir>/chats.sqlite3
    model = store.model_ref(model_path)        # hashes the file once, then cached
    chat = store.new_chat("Why is the sky blue?", model)
    store.add_message(chat, "user", "Why is the sky blue?")
    writer = store.begin_reply(chat, model, live.current, max_tokens=512)
    for event in backend.generate(...):
        if isinstance(event, TokenEvent):
            writer.append(event)
        elif isinstance(event, FinishedEvent):
            writer.finish_event(event)
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from backend.events import FinishedEvent, GenerationStats, TokenEvent
from backend.paths import default_store_path
from backend.protocol import Role
from backend.store_records import (
    INTERRUPTED,
    ChatRecord,
    ChatSummary,
    MessageRecord,
    ModelRef,
    ReplyRecord,
    SettingsChange,
    StoreError,
    file_sha256,
    file_signature,
)
from backend.store_schema import migrate, schema_version
from sampling.errors import SettingsError
from sampling.settings import SamplerSettings

__all__ = [
    "INTERRUPTED",
    "ChatRecord",
    "ChatStore",
    "ChatSummary",
    "MessageRecord",
    "ModelRef",
    "ReplyRecord",
    "ReplyWriter",
    "SettingsChange",
    "StoreError",
    "suggest_title",
]

TITLE_LENGTH = 60


def suggest_title(text: str) -> str:
    """A chat title from its first user message: one line, at most 60 characters."""
    line = " ".join(text.split())
    if len(line) <= TITLE_LENGTH:
        return line or "Untitled chat"
    return line[: TITLE_LENGTH - 1].rstrip() + "…"


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _to_datetime(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def _settings_json(settings: SamplerSettings) -> str:
    return json.dumps(settings.to_dict(), sort_keys=True)


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class ChatStore:
    """The chat database.

    Args:
        path: The database file; default `<user data dir>/chats.sqlite3` (the
            directory is created). `SAMPLESCOPE_DATA_DIR` overrides the directory.
        clock: Returns the current time (aware datetime); tests pass a fixed one.

    Raises:
        StoreError: The file cannot be created or opened, is not a database, is
            corrupt, is locked for longer than the timeout, or was written by a newer
            samplescope. The message names the file.
    """

    def __init__(
        self,
        path: Path | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        timeout: float = 5.0,
    ) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self._clock = clock or _utc_now
        self._lock = threading.RLock()
        self._hash_cache: dict[tuple[str, int, int], str] = {}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(
                f"cannot create the chat database's folder {self.path.parent}: {error}"
            ) from error
        with self._guard("open"):
            self._conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        try:
            with self._guard("open"):
                self._conn.execute("PRAGMA foreign_keys = ON")
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = NORMAL")
                try:
                    migrate(self._conn)
                except ValueError as error:
                    raise StoreError(f"chat database {self.path}: {error}") from error
        except BaseException:
            self._conn.close()
            raise

    # -- lifecycle -------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ChatStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        """The database's schema version (PRAGMA user_version)."""
        with self._guard("read the schema version"):
            return schema_version(self._conn)

    # -- plumbing --------------------------------------------------------------

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """Hold the lock and turn sqlite errors into StoreError naming the file."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as error:
                raise StoreError(self._describe(error, action)) from error

    def _describe(self, error: sqlite3.Error, action: str) -> str:
        text = str(error)
        if "not a database" in text or "malformed" in text:
            return f"chat database {self.path} is corrupt or not a samplescope database ({text})"
        if "locked" in text or "busy" in text:
            return f"chat database {self.path} is locked by another process ({text})"
        if "unable to open" in text or "readonly" in text or "disk I/O" in text:
            return f"cannot {action} chat database {self.path}: {text}"
        return f"chat database {self.path}: {action} failed: {text}"

    @contextmanager
    def _transaction(self, action: str) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE … COMMIT), rolled back on error."""
        with self._guard(action):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _now(self) -> float:
        return self._clock().timestamp()

    # -- models ----------------------------------------------------------------

    def model_ref(self, path: Path | str) -> ModelRef:
        """Path, size and SHA-256 of a model file.

        The hash is computed once per (path, size, mtime) and cached in the database,
        so this is cheap after the first call. Hashing a large file takes seconds:
        call it from a worker thread (e.g. right after the model loads).

        Raises:
            StoreError: The file cannot be read.
        """
        try:
            key = file_signature(Path(path))
        except OSError as error:
            raise StoreError(f"cannot read model file {path}: {error}") from error
        sha = self._hash_cache.get(key)
        if sha is None:
            with self._guard("read the model hash cache"):
                row = self._conn.execute(
                    "SELECT sha256 FROM model_files WHERE path = ? AND size = ? AND mtime_ns = ?",
                    key,
                ).fetchone()
            if row is not None:
                sha = str(row[0])
            else:
                try:
                    sha = file_sha256(Path(key[0]))
                except OSError as error:
                    raise StoreError(f"cannot read model file {path}: {error}") from error
                with self._transaction("cache the model hash") as conn:
                    conn.execute(
                        "INSERT OR REPLACE INTO model_files (path, size, mtime_ns, sha256) "
                        "VALUES (?, ?, ?, ?)",
                        (*key, sha),
                    )
            self._hash_cache[key] = sha
        return ModelRef(path=key[0], size=key[1], sha256=sha)

    # -- writing ---------------------------------------------------------------

    def new_chat(self, title: str, model: ModelRef | None = None) -> int:
        """Create an empty chat; returns its id."""
        now = self._now()
        with self._transaction("create a chat") as conn:
            cursor = conn.execute(
                "INSERT INTO chats (title, created, updated, model_path, model_size, "
                "model_sha256) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    title,
                    now,
                    now,
                    model.path if model else None,
                    model.size if model else None,
                    model.sha256 if model else None,
                ),
            )
            return int(cursor.lastrowid or 0)

    def _insert_message(
        self, conn: sqlite3.Connection, chat_id: int, role: Role, content: str, now: float
    ) -> int:
        if conn.execute("SELECT 1 FROM chats WHERE id = ?", (chat_id,)).fetchone() is None:
            raise StoreError(f"chat database {self.path} has no chat {chat_id}")
        row = conn.execute(
            "SELECT coalesce(max(position) + 1, 0) FROM messages WHERE chat_id = ?", (chat_id,)
        ).fetchone()
        cursor = conn.execute(
            "INSERT INTO messages (chat_id, position, role, content, created) "
            "VALUES (?, ?, ?, ?, ?)",
            (chat_id, int(row[0]), role, content, now),
        )
        conn.execute("UPDATE chats SET updated = ? WHERE id = ?", (now, chat_id))
        return int(cursor.lastrowid or 0)

    def add_message(self, chat_id: int, role: Role, content: str) -> int:
        """Append a turn (system, user, or a non-generated assistant turn); returns its id.

        Raises:
            StoreError: There is no such chat.
        """
        now = self._now()
        with self._transaction("add a message") as conn:
            return self._insert_message(conn, chat_id, role, content, now)

    def begin_reply(
        self,
        chat_id: int,
        model: ModelRef,
        settings: SamplerSettings,
        *,
        max_tokens: int | None = None,
        n_ctx: int | None = None,
        n_batch: int | None = None,
    ) -> ReplyWriter:
        """Start recording a generated reply: an empty assistant turn plus its record.

        Args:
            chat_id: The chat (whose last turn is normally the user's).
            model: The model generating it (`model_ref(path)`).
            settings: The settings at the start (seed and generator come from them).
            max_tokens: The token limit of the generation, kept for replay.
            n_ctx: The backend's context size (`backend.info.n_ctx`), for replay.
            n_batch: The backend's prefill chunk size (`backend.info.n_batch`), for
                replay (a prefill chunk of one token computes slightly different
                logits than a longer one, so exact replay re-chunks the same way).

        Returns:
            The writer to feed tokens and the finish to.
        """
        now = self._now()
        with self._transaction("start a reply") as conn:
            message_id = self._insert_message(conn, chat_id, "assistant", "", now)
            cursor = conn.execute(
                "INSERT INTO replies (message_id, model_path, model_size, model_sha256, seed, "
                "rng, max_tokens, n_ctx, n_batch, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    message_id,
                    model.path,
                    model.size,
                    model.sha256,
                    str(settings.seed),
                    settings.rng,
                    max_tokens,
                    n_ctx,
                    n_batch,
                    now,
                ),
            )
            reply_id = int(cursor.lastrowid or 0)
            conn.execute(
                "INSERT INTO settings_changes (reply_id, from_index, settings) VALUES (?, 0, ?)",
                (reply_id, _settings_json(settings)),
            )
        return ReplyWriter(self, chat_id, message_id, reply_id, settings)

    def rename_chat(self, chat_id: int, title: str) -> None:
        """Give a chat a new title.

        Raises:
            StoreError: There is no such chat.
        """
        with self._transaction("rename a chat") as conn:
            cursor = conn.execute("UPDATE chats SET title = ? WHERE id = ?", (title, chat_id))
            if cursor.rowcount == 0:
                raise StoreError(f"chat database {self.path} has no chat {chat_id}")

    def delete_chat(self, chat_id: int) -> None:
        """Delete a chat with its messages, replies, tokens and settings.

        Raises:
            StoreError: There is no such chat.
        """
        with self._transaction("delete a chat") as conn:
            cursor = conn.execute("DELETE FROM chats WHERE id = ?", (chat_id,))
            if cursor.rowcount == 0:
                raise StoreError(f"chat database {self.path} has no chat {chat_id}")

    # -- reading ---------------------------------------------------------------

    def list_chats(self, search: str | None = None) -> list[ChatSummary]:
        """Chats, most recently updated first.

        Args:
            search: Keep only chats whose title or any message contains this text
                (case-insensitive for ASCII); None or "" keeps all.
        """
        pattern = f"%{_escape_like(search)}%" if search else None
        with self._guard("list chats"):
            rows = self._conn.execute(
                """
                SELECT c.id, c.title, c.created, c.updated, coalesce(c.model_path, ''),
                    (SELECT count(*) FROM messages m WHERE m.chat_id = c.id),
                    (SELECT count(*) FROM replies r JOIN messages m ON r.message_id = m.id
                        WHERE m.chat_id = c.id)
                FROM chats c
                WHERE ?1 IS NULL OR c.title LIKE ?1 ESCAPE '\\' OR EXISTS (
                    SELECT 1 FROM messages m
                    WHERE m.chat_id = c.id AND m.content LIKE ?1 ESCAPE '\\')
                ORDER BY c.updated DESC, c.id DESC
                """,
                (pattern,),
            ).fetchall()
        return [
            ChatSummary(
                id=int(row[0]),
                title=str(row[1]),
                created=_to_datetime(row[2]),
                updated=_to_datetime(row[3]),
                model_path=str(row[4]),
                message_count=int(row[5]),
                reply_count=int(row[6]),
            )
            for row in rows
        ]

    def load_chat(self, chat_id: int) -> ChatRecord:
        """A whole chat: its turns, and for generated turns the reply records.

        Raises:
            StoreError: There is no such chat, or a stored record cannot be read.
        """
        with self._guard("load a chat"):
            chat = self._conn.execute(
                "SELECT id, title, created, updated, model_path, model_size, model_sha256 "
                "FROM chats WHERE id = ?",
                (chat_id,),
            ).fetchone()
            if chat is None:
                raise StoreError(f"chat database {self.path} has no chat {chat_id}")
            message_rows = self._conn.execute(
                "SELECT id, position, role, content, created FROM messages "
                "WHERE chat_id = ? ORDER BY position",
                (chat_id,),
            ).fetchall()
            replies = self._load_replies(chat_id)
        messages = tuple(
            MessageRecord(
                id=int(row[0]),
                position=int(row[1]),
                role=row[2],
                content=str(row[3]),
                created=_to_datetime(row[4]),
                reply=replies.get(int(row[0])),
            )
            for row in message_rows
        )
        model = ModelRef(str(chat[4]), int(chat[5]), str(chat[6])) if chat[4] is not None else None
        return ChatRecord(
            id=int(chat[0]),
            title=str(chat[1]),
            created=_to_datetime(chat[2]),
            updated=_to_datetime(chat[3]),
            model=model,
            messages=messages,
        )

    def _load_replies(self, chat_id: int) -> dict[int, ReplyRecord]:
        """Replies of a chat keyed by their message id (caller holds the guard)."""
        rows = self._conn.execute(
            "SELECT r.id, r.message_id, r.model_path, r.model_size, r.model_sha256, r.seed, "
            "r.rng, r.max_tokens, r.finish_reason, r.error, r.stats, r.created, r.finished, "
            "m.content, r.n_ctx, r.n_batch FROM replies r JOIN messages m ON r.message_id = m.id "
            "WHERE m.chat_id = ? ORDER BY m.position",
            (chat_id,),
        ).fetchall()
        replies: dict[int, ReplyRecord] = {}
        for number, row in enumerate(rows, start=1):
            reply_id = int(row[0])
            tokens = tuple(
                int(t[0])
                for t in self._conn.execute(
                    "SELECT token_id FROM reply_tokens WHERE reply_id = ? ORDER BY idx",
                    (reply_id,),
                )
            )
            changes = tuple(
                SettingsChange(int(c[0]), self._parse_settings(str(c[1]), reply_id))
                for c in self._conn.execute(
                    "SELECT from_index, settings FROM settings_changes WHERE reply_id = ? "
                    "ORDER BY from_index",
                    (reply_id,),
                )
            )
            if not changes:
                raise StoreError(
                    f"chat database {self.path}: reply {reply_id} has no settings recorded"
                )
            replies[int(row[1])] = ReplyRecord(
                id=reply_id,
                number=number,
                message_id=int(row[1]),
                model=ModelRef(str(row[2]), int(row[3]), str(row[4])),
                seed=int(row[5]),
                rng=str(row[6]),
                max_tokens=None if row[7] is None else int(row[7]),
                n_ctx=None if row[14] is None else int(row[14]),
                n_batch=None if row[15] is None else int(row[15]),
                finish_reason=INTERRUPTED if row[8] is None else str(row[8]),
                error=None if row[9] is None else str(row[9]),
                stats=self._parse_stats(row[10]),
                token_ids=tokens,
                settings_changes=changes,
                text=str(row[13]),
                created=_to_datetime(row[11]),
                finished=None if row[12] is None else _to_datetime(row[12]),
            )
        return replies

    def _parse_settings(self, text: str, reply_id: int) -> SamplerSettings:
        try:
            values = json.loads(text)
            if not isinstance(values, dict):
                raise ValueError("not a JSON object")
            return SamplerSettings.from_dict(values)
        except (ValueError, TypeError, SettingsError) as error:
            raise StoreError(
                f"chat database {self.path}: reply {reply_id} has unreadable settings: {error}"
            ) from error

    @staticmethod
    def _parse_stats(text: str | None) -> GenerationStats | None:
        if text is None:
            return None
        try:
            values: dict[str, Any] = json.loads(text)
            known = GenerationStats.__dataclass_fields__
            return GenerationStats(**{k: v for k, v in values.items() if k in known})
        except (ValueError, TypeError, AttributeError):
            return None


class ReplyWriter:
    """Records one reply token by token; get one from `ChatStore.begin_reply`.

    Each `append_token` is its own committed transaction, so a killed process keeps
    every token that was appended. Usable from any one thread at a time (typically
    the generation worker, so the store never lags behind the model).
    """

    def __init__(
        self,
        store: ChatStore,
        chat_id: int,
        message_id: int,
        reply_id: int,
        settings: SamplerSettings,
    ) -> None:
        self.store = store
        self.chat_id = chat_id
        self.message_id = message_id
        self.reply_id = reply_id
        self._last_settings = settings
        self._count = 0
        self._finished = False

    @property
    def token_count(self) -> int:
        """How many tokens have been stored."""
        return self._count

    @property
    def finished(self) -> bool:
        """Whether `finish` was called."""
        return self._finished

    def append_token(
        self, index: int, token_id: int, settings: SamplerSettings, text: str = ""
    ) -> None:
        """Store one sampled token and commit.

        Args:
            index: Its 0-based index in the reply (must be the next one).
            token_id: The token.
            settings: The settings it was sampled with; stored only when they differ
                from the previous token's.
            text: The text it adds to the reply (TokenEvent.text; may be "").

        Raises:
            StoreError: The reply is finished, the index is not the next one, or the
                database cannot be written.
        """
        if self._finished:
            raise StoreError(f"reply {self.reply_id} is already finished")
        if index != self._count:
            raise StoreError(
                f"reply {self.reply_id}: token index {index} out of order (expected {self._count})"
            )
        changed = settings != self._last_settings
        with self.store._transaction("store a token") as conn:
            conn.execute(
                "INSERT INTO reply_tokens (reply_id, idx, token_id) VALUES (?, ?, ?)",
                (self.reply_id, index, int(token_id)),
            )
            if changed:
                conn.execute(
                    "INSERT INTO settings_changes (reply_id, from_index, settings) "
                    "VALUES (?, ?, ?)",
                    (self.reply_id, index, _settings_json(settings)),
                )
            if text:
                conn.execute(
                    "UPDATE messages SET content = content || ? WHERE id = ?",
                    (text, self.message_id),
                )
        self._count += 1
        self._last_settings = settings

    def append(self, event: TokenEvent) -> None:
        """Store a TokenEvent (its index, token, step settings and text)."""
        self.append_token(event.index, event.step.token_id, event.step.settings, event.text)

    def finish(
        self,
        reason: str,
        stats: GenerationStats | None,
        text: str,
        *,
        error: str | None = None,
        token_ids: Sequence[int] | None = None,
    ) -> None:
        """Mark the reply finished with its final text and figures.

        Args:
            reason: The finish reason ("eos", "max_tokens", "cancelled", "error").
            stats: The generation's figures.
            text: The whole reply text (replaces the text accumulated per token).
            error: The error message when reason is "error".
            token_ids: All token ids of the reply; any beyond those appended are
                stored too (with the last settings), earlier ones are not rewritten.
        """
        if self._finished:
            raise StoreError(f"reply {self.reply_id} is already finished")
        now = self.store._now()
        extra = list(token_ids[self._count :]) if token_ids is not None else []
        with self.store._transaction("finish a reply") as conn:
            conn.executemany(
                "INSERT INTO reply_tokens (reply_id, idx, token_id) VALUES (?, ?, ?)",
                [(self.reply_id, self._count + i, int(t)) for i, t in enumerate(extra)],
            )
            conn.execute(
                "UPDATE replies SET finish_reason = ?, error = ?, stats = ?, finished = ? "
                "WHERE id = ?",
                (
                    reason,
                    error,
                    None if stats is None else json.dumps(asdict(stats)),
                    now,
                    self.reply_id,
                ),
            )
            conn.execute("UPDATE messages SET content = ? WHERE id = ?", (text, self.message_id))
            conn.execute("UPDATE chats SET updated = ? WHERE id = ?", (now, self.chat_id))
        self._count += len(extra)
        self._finished = True

    def finish_event(self, event: FinishedEvent) -> None:
        """Finish from the backend's FinishedEvent."""
        self.finish(
            event.reason, event.stats, event.text, error=event.error, token_ids=event.token_ids
        )
