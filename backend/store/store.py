"""Saved chats: a SQLite database (WAL mode) written as the chat happens.

One `ChatStore` wraps one connection. Every public method holds the store's lock, so
the generation thread may write tokens while the UI thread reads the chat list; the
connection is opened with `check_same_thread=False` for that reason.

Durability: `ReplyWriter.append_token` commits each token in its own transaction,
with the text it adds (the reply's whole text is written when it finishes), or with
`commit_every` the tokens of that many seconds together (`ChatRecorder`, which the app
and the commands use, commits every `RECORD_COMMIT_EVERY` seconds: a commit a token
costs the generation thread several percent of its speed). In WAL mode with
synchronous=NORMAL a commit is in the OS's hands once it returns, so killing the
process mid-reply loses at most the tokens not committed yet (a power cut may lose the
last few commits, never corrupt the file). A reply that never reached `finish`
loads with finish reason "interrupted" and its text so far, built from its tokens'
stored text — no detokenizer is needed to read a chat back.

Typical use (see `ChatStore.begin_reply`):

    store = ChatStore(default_store_path())    # <data dir>/chats.sqlite3
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

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from backend.chat.protocol import Role
from backend.private_files import private_database, private_folder
from backend.store import branches as store_branches
from backend.store import read as store_read
from backend.store import sweeps as store_sweeps
from backend.store.branches import Fork
from backend.store.records import (
    INTERRUPTED,
    ChatRecord,
    ChatSummary,
    MessageRecord,
    ModelRef,
    ReplyRecord,
    SettingsChange,
    StoreError,
    describe_error,
    file_sha256,
    file_signature,
    suggest_title,
)
from backend.store.schema import open_database, schema_version
from backend.store.sweeps import HistoryEntry, SweepSummary
from backend.store.writer import ReplyWriter
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SamplescopeError
from sampling.records import Step
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry

__all__ = [
    "INTERRUPTED",
    "ChatRecord",
    "ChatStore",
    "ChatSummary",
    "Fork",
    "HistoryEntry",
    "MessageRecord",
    "ModelRef",
    "ReplyRecord",
    "ReplyWriter",
    "SettingsChange",
    "StoreError",
    "SweepSummary",
    "suggest_title",
]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ChatStore:
    """The chat database.

    Args:
        path: The database file (created readable by its owner alone, 0600, in a
            folder created 0700 when missing); the front ends name
            `backend.config.paths.default_store_path()` when the user names none.
        clock: Returns the current time (aware datetime); tests pass a fixed one.
        registry: The registry stored settings are read with (the front door's: the
            built-in units and the plugins it loaded).

    Raises:
        StoreError: The file cannot be created or opened, is not a database, is
            corrupt, is locked for longer than the timeout, or was written by a newer
            samplescope. The message names the file.
    """

    def __init__(
        self,
        path: Path,
        *,
        clock: Callable[[], datetime] | None = None,
        timeout: float = 5.0,
        registry: Registry = BUILT_IN_REGISTRY,
    ) -> None:
        self.path = Path(path)
        self.registry = registry
        self._clock = clock or _utc_now
        self._lock = threading.RLock()
        self._hash_cache: dict[tuple[str, int, int], str] = {}
        try:
            private_folder(self.path.parent)
        except OSError as error:
            raise StoreError(
                f"cannot create the chat database's folder {self.path.parent}: {error}"
            ) from error
        try:
            private_database(self.path)
        except OSError as error:
            raise StoreError(f"cannot create the chat database {self.path}: {error}") from error
        with self._guard("open"):
            self._conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        try:
            with self._guard("open"):
                try:
                    open_database(self._conn)
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
                raise StoreError(describe_error(self.path, error, action)) from error
            except OverflowError as error:
                # An id past SQLite's 64-bit integers names nothing stored.
                raise StoreError(f"cannot {action}: {error} (ids are below 2**63)") from error

    @contextmanager
    def _reading(self, action: str) -> Iterator[None]:
        """As `_guard`, and a stored value of the wrong type or shape (damage, or a
        hand edit: text where a number belongs, JSON that is not a record) is a
        StoreError naming the file, not the reader's own exception."""
        with self._guard(action):
            try:
                yield
            except SamplescopeError:
                raise
            except (ValueError, TypeError, KeyError, IndexError, AttributeError) as error:
                raise StoreError(
                    f"chat database {self.path}: cannot {action}: a stored value is damaged"
                    f" ({type(error).__name__}: {' '.join(str(error).split())[:200]})"
                ) from error

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
        _, after = store_read.visible_messages(conn, chat_id)
        cursor = conn.execute(
            "INSERT INTO messages (chat_id, position, role, content, created, after_reply_id) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (chat_id, int(row[0]), role, content, now, after),
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
        mode: str = "chat",
        fork: Fork | None = None,
        decoding: str | None = None,
        commit_every: float = 0.0,
        control_vectors: str | None = None,
        contrast_model: ModelRef | None = None,
        template_switches: str | None = None,
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
            mode: "chat" or "completion" (how the prompt was built).
            fork: Record a new branch of an existing reply instead of a new turn:
                its first `fork.at` tokens are the parent's (stored now), the writer
                takes tokens from index `fork.at` on.
            decoding: How it is decoded, as JSON (None: alone, one sequence).
            commit_every: Seconds between the writer's commits (0: every token);
                see `ReplyWriter`.
            control_vectors: The control vectors the model applies, as JSON
                (`control_vectors_json`; None: none), for replay.
            contrast_model: The smaller model contrast decodes beside it (None:
                none), for replay.
            template_switches: The chat template's switches, as JSON
                (`TemplateSwitches.to_json`; None: none set), for replay.

        Returns:
            The writer to feed tokens and the finish to.
        """
        now = self._now()
        run = {
            "max_tokens": max_tokens,
            "n_ctx": n_ctx,
            "n_batch": n_batch,
            "mode": mode,
            "decoding": decoding,
            "control_vectors": control_vectors,
            "contrast_model": contrast_model,
            "template_switches": template_switches,
        }
        with self._transaction("start a reply") as conn:
            if fork is None:
                message_id = self._insert_message(conn, chat_id, "assistant", "", now)
            else:
                message_id = fork.parent.message_id
            reply_id = store_branches.insert_reply(
                conn, message_id, model, settings, now, fork, run
            )
            if fork is not None:
                store_branches.start_branch(conn, chat_id, reply_id, fork, now)
        return ReplyWriter(
            self._transaction,
            self._now,
            chat_id,
            message_id,
            reply_id,
            settings,
            start=0 if fork is None else fork.at,
            commit_every=commit_every,
        )

    def follow_branch(self, chat_id: int, reply_id: int) -> None:
        """Make the conversation follow another branch of a turn (its text becomes the turn's).

        Raises:
            StoreError: The chat has no such reply.
        """
        with self._transaction("choose a branch") as conn:
            store_branches.follow(conn, self.path, chat_id, reply_id, self._now())

    def load_steps(self, chat: ChatRecord, reply: ReplyRecord) -> dict[int, Step]:
        """The per-token records of a branch of `chat`, by index (from its parent
        before its fork; none for replies recorded before records were kept).

        Raises:
            StoreError: A record cannot be read.
        """
        siblings = store_branches.turn_of(chat, reply)
        with self._reading("load token records"):
            return store_branches.steps_along(self._conn, self.path, reply, siblings)

    def load_pieces(self, chat: ChatRecord, reply: ReplyRecord) -> dict[int, str]:
        """The text each token of a branch of `chat` added, by index (from its parent
        before its fork; missing for tokens stored before pieces were)."""
        with self._reading("load token texts"):
            return store_branches.pieces_along(self._conn, chat, reply)

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

    def delete_message(self, message_id: int) -> None:
        """Delete one turn (with its reply record): e.g. the reply a regenerate replaces.

        Raises:
            StoreError: There is no such message.
        """
        now = self._now()
        with self._transaction("delete a message") as conn:
            row = conn.execute(
                "SELECT chat_id FROM messages WHERE id = ?", (message_id,)
            ).fetchone()
            if row is None:
                raise StoreError(f"chat database {self.path} has no message {message_id}")
            conn.execute("DELETE FROM messages WHERE id = ?", (message_id,))
            conn.execute("UPDATE chats SET updated = ? WHERE id = ?", (now, int(row[0])))

    def keep_sweep(self, title: str, model_path: str, result: str, chat_ids: list[int]) -> int:
        """Keep a finished sweep's result (JSON text) with its samples' chats, which the
        saved chats then list as one entry; returns its id."""
        now = self._now()
        with self._transaction("keep a sweep") as conn:
            return store_sweeps.keep_sweep(conn, title, model_path, result, chat_ids, now)

    def sweep_result(self, sweep_id: int) -> str:
        """A kept sweep's result (JSON text).

        Raises:
            StoreError: There is no such sweep.
        """
        with self._reading("load a sweep"):
            return store_sweeps.sweep_result(self._conn, self.path, sweep_id)

    def delete_sweep(self, sweep_id: int) -> None:
        """Delete a kept sweep with its samples' chats.

        Raises:
            StoreError: There is no such sweep.
        """
        with self._transaction("delete a sweep") as conn:
            store_sweeps.delete_sweep(conn, self.path, sweep_id)

    # -- reading ---------------------------------------------------------------

    def list_history(self, search: str | None = None) -> list[HistoryEntry]:
        """The saved chats' list: `list_chats`, with each kept sweep's samples as one
        entry (where its newest sample listed is)."""
        with self._reading("list chats"):
            return store_sweeps.history(self._conn, store_read.list_chats(self._conn, search))

    def list_chats(self, search: str | None = None) -> list[ChatSummary]:
        """Chats, most recently updated first.

        Args:
            search: Keep only chats whose title or any message contains this text
                (case-insensitive for ASCII); None or "" keeps all.
        """
        with self._reading("list chats"):
            return store_read.list_chats(self._conn, search)

    def load_chat(self, chat_id: int) -> ChatRecord:
        """A whole chat: its turns, and for generated turns the reply records.

        Raises:
            StoreError: There is no such chat, or a stored record cannot be read.
        """
        with self._reading("load a chat"):
            return store_read.load_chat(self._conn, self.path, chat_id, self.registry)
