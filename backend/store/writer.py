"""Recording one reply token by token (see `ChatStore.begin_reply`)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from backend.chat.events import FinishedEvent, GenerationStats, RewindEvent, TokenEvent
from backend.store.records import REJECTED, StoreError, settings_json
from backend.store.reply_row import copy_reply_row, update_reply_row
from backend.store.steps import StepLayout, layout_of, pack_reports, pack_step
from sampling.analysis.loops import Loop
from sampling.records import Step
from sampling.settings.record import SamplerSettings

Transaction = Callable[[str], AbstractContextManager[sqlite3.Connection]]
"""Opens one write transaction; its argument names the action for error messages."""


@dataclass(frozen=True, slots=True)
class _Appended:
    """A token appended and not committed yet (`settings`: set when they changed)."""

    index: int
    token_id: int
    text: str
    settings: SamplerSettings | None
    step: Step | None


class ReplyWriter:
    """Records one reply token by token; get one from `ChatStore.begin_reply`.

    With `commit_every` 0 each `append_token` is its own committed transaction, so a
    killed process keeps every token that was appended. With `commit_every` > 0 the
    tokens are committed together once that many seconds have passed since the last
    commit (and always before a rewind and at the finish): a killed process keeps all
    but the tokens of the last `commit_every` seconds, and the generation thread pays
    for one commit a batch instead of one a token. Its cost does not grow with the
    reply: a token is
    one new row holding its id and the text it adds (`reply_tokens.piece`); the
    reply's text is written once, by `finish` (an unfinished reply's text is its
    start plus the pieces, built when it is read). Usable from any one thread at a
    time (typically the generation worker, so the store never lags behind the model).

    A branch's writer starts at its fork (`start`: the tokens before it are its
    parent's). `finish` writes the text into the turn's message too when the
    conversation follows the branch then.
    """

    def __init__(
        self,
        transaction: Transaction,
        now: Callable[[], float],
        chat_id: int,
        message_id: int,
        reply_id: int,
        settings: SamplerSettings,
        *,
        start: int = 0,
        commit_every: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._transaction = transaction
        self._commit_every = commit_every
        self._clock = clock
        self._committed_at = clock()
        self._pending: list[_Appended] = []
        """The tokens appended since the last commit, in order."""
        self._now = now
        self.chat_id = chat_id
        self.message_id = message_id
        self.reply_id = reply_id
        self._last_settings = settings
        # The settings in force from each index on (-1: the reply's start), as stored.
        self._changes: list[tuple[int, SamplerSettings]] = [(-1, settings)]
        self._start = start
        self._count = start
        self._layout: StepLayout | None = None
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
        self,
        index: int,
        token_id: int,
        settings: SamplerSettings,
        text: str = "",
        step: Step | None = None,
    ) -> None:
        """Store one sampled token (committed now, or with its batch: `commit_every`).

        Args:
            index: Its 0-based index in the reply (must be the next one).
            token_id: The token.
            settings: The settings it was sampled with; stored only when they differ
                from the previous token's.
            text: The text it adds to the reply (TokenEvent.text; may be ""), kept in
                its row: an unfinished reply's text is built from these.
            step: The sampler's record of the token, stored as a compact row
                (`backend.store.steps`) for inspecting and what-if after reopening.

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
        changed = settings is not self._last_settings and settings != self._last_settings
        # Packed and written by `commit`, in one batch: done once a token right after
        # the model's decode, the same work runs several times slower (cold caches).
        self._pending.append(
            _Appended(index, int(token_id), text, settings if changed else None, step)
        )
        if self._commit_every <= 0 or self._clock() - self._committed_at >= self._commit_every:
            self.commit()
        self._count += 1
        self._last_settings = settings
        if changed:
            self._changes.append((index, settings))

    def commit(self) -> None:
        """Commit the tokens appended since the last commit (none: nothing to do).

        Raises:
            StoreError: The database cannot be written (the batch is dropped).
        """
        pending, self._pending = self._pending, []
        self._committed_at = self._clock()
        if not pending:
            return
        reply_id = self.reply_id
        steps = [(a.index, a.step) for a in pending if a.step is not None]
        layout_json = None
        step_rows = []
        if steps:
            if self._layout is None:
                self._layout = layout_of(steps[0][1])
                layout_json = self._layout.to_json()
            layout = self._layout
            step_rows = [
                (reply_id, index, *pack_step(step, layout), pack_reports(step))
                for index, step in steps
            ]
        with self._transaction("store tokens") as conn:
            conn.executemany(
                "INSERT INTO reply_tokens (reply_id, idx, token_id, piece) VALUES (?, ?, ?, ?)",
                [(reply_id, a.index, a.token_id, a.text) for a in pending],
            )
            # At index 0 a change replaces the settings the reply began with: a slider
            # moved during the prefill applies from the first token.
            conn.executemany(
                "INSERT OR REPLACE INTO settings_changes (reply_id, from_index, settings) "
                "VALUES (?, ?, ?)",
                [
                    (reply_id, a.index, settings_json(a.settings))
                    for a in pending
                    if a.settings is not None
                ],
            )
            if layout_json is not None:
                conn.execute(
                    "UPDATE replies SET step_layout = ? WHERE id = ?", (layout_json, reply_id)
                )
            conn.executemany(
                "INSERT INTO reply_steps (reply_id, idx, scalars, arrays, reports) "
                "VALUES (?, ?, ?, ?, ?)",
                step_rows,
            )

    def revise(self, at: int) -> None:
        """Take back the unfinished reply's tokens from index `at` on, with no trace:
        they were a draft (a beam search's reply follows its best beam so far, which may
        part from the one before), and the next `append_token` continues at `at`.

        Raises:
            StoreError: The reply is finished, the index lies outside the tokens
                appended, or the database cannot be written.
        """
        self._check_going_back(at, self._count)
        if at == self._count:
            return
        self.commit()
        with self._transaction("revise a reply") as conn:
            for table in ("reply_tokens", "reply_steps"):
                conn.execute(
                    f"DELETE FROM {table} WHERE reply_id = ? AND idx >= ?", (self.reply_id, at)
                )
            self._drop_changes_from(conn, at)
        self._back_to(at)

    def rewind(self, event: RewindEvent) -> int:
        """The reply went back to token `event.index`: its tokens from there on become
        a ghost branch (finish reason "rejected", forking at that index) and the reply
        takes tokens from that index again.

        Ghosts made earlier that fork past the index go with the tokens they fork from:
        they become branches of the new ghost.

        Returns:
            The ghost's reply id.

        Raises:
            StoreError: The reply is finished, the index lies outside the tokens
                appended, or the database cannot be written.
        """
        at = event.index
        self._check_going_back(at, self._count - 1)
        self.commit()
        in_force = [s for i, s in self._changes if i <= at][-1]
        now = self._now()
        with self._transaction("keep a rejected attempt") as conn:
            pieces = conn.execute(
                "SELECT piece FROM reply_tokens WHERE reply_id = ? AND idx < ? AND piece "
                "IS NOT NULL ORDER BY idx",
                (self.reply_id, at),
            ).fetchall()
            start = conn.execute("SELECT text FROM replies WHERE id = ?", (self.reply_id,))
            text = str(start.fetchone()[0] or "") + "".join(str(p[0]) for p in pieces)
            ghost = copy_reply_row(
                conn,
                self.reply_id,
                {
                    "parent_id": self.reply_id,
                    "fork_at": at,
                    "finish_reason": REJECTED,
                    "created": now,
                    "finished": now,
                    "text": text + event.text,
                },
            )
            for table in ("reply_tokens", "reply_steps"):
                conn.execute(
                    f"UPDATE {table} SET reply_id = ? WHERE reply_id = ? AND idx >= ?",
                    (ghost, self.reply_id, at),
                )
            conn.execute(
                "INSERT INTO reply_tokens (reply_id, idx, token_id) "
                "SELECT ?, idx, token_id FROM reply_tokens WHERE reply_id = ? AND idx < ?",
                (ghost, self.reply_id, at),
            )
            conn.execute(
                "INSERT INTO settings_changes (reply_id, from_index, settings) VALUES (?, 0, ?)",
                (ghost, settings_json(in_force)),
            )
            conn.execute(
                "INSERT INTO settings_changes (reply_id, from_index, settings) "
                "SELECT ?, from_index, settings FROM settings_changes "
                "WHERE reply_id = ? AND from_index > ?",
                (ghost, self.reply_id, at),
            )
            self._drop_changes_from(conn, at)
            conn.execute(
                "UPDATE replies SET parent_id = ? WHERE parent_id = ? AND fork_at > ? "
                "AND finish_reason = ?",
                (ghost, self.reply_id, at, REJECTED),
            )
        self._back_to(at)
        return ghost

    def _check_going_back(self, at: int, last: int) -> None:
        """Refuse to go back to token `at` unless the reply is open and `at` lies
        between its first appended token and `last`.

        Raises:
            StoreError: The reply is finished, or `at` lies outside those tokens.
        """
        if self._finished:
            raise StoreError(f"reply {self.reply_id} is already finished")
        if not self._start <= at <= last:
            raise StoreError(
                f"reply {self.reply_id}: cannot go back to token {at} "
                f"(it holds tokens {self._start} to {self._count - 1})"
            )

    def _drop_changes_from(self, conn: sqlite3.Connection, at: int) -> None:
        """Delete the reply's settings changes from token `at` on; the start's row
        stays, holding the settings the reply started with again."""
        conn.execute(
            "DELETE FROM settings_changes WHERE reply_id = ? AND from_index >= ? "
            "AND from_index > 0",
            (self.reply_id, at),
        )
        if at == 0:  # a change at token 0 replaced the start's row: put it back
            conn.execute(
                "UPDATE settings_changes SET settings = ? WHERE reply_id = ? AND from_index = 0",
                (settings_json(self._changes[0][1]), self.reply_id),
            )

    def _back_to(self, at: int) -> None:
        """The reply holds tokens up to `at` (excluded) and the settings in force there."""
        self._changes = [(i, s) for i, s in self._changes if i < at]
        self._last_settings = self._changes[-1][1]
        self._count = at

    def append(self, event: TokenEvent) -> None:
        """Store a TokenEvent (its index, token, step record, settings and text)."""
        step = event.step
        self.append_token(event.index, step.token_id, step.settings_given, event.text, step)

    def finish(
        self,
        reason: str,
        stats: GenerationStats | None,
        text: str,
        *,
        error: str | None = None,
        token_ids: Sequence[int] | None = None,
        loop: Loop | None = None,
    ) -> None:
        """Mark the reply finished with its final text and figures.

        Args:
            reason: The finish reason (`FinishReason`).
            stats: The generation's figures.
            text: The whole reply text (the reply's, and the turn's when the
                conversation follows this branch).
            error: The error message when reason is "error".
            token_ids: All token ids of the reply; any beyond those appended are
                stored too (with the last settings), earlier ones are not rewritten.
            loop: The latest repetition loop found in it (None: none).
        """
        if self._finished:
            raise StoreError(f"reply {self.reply_id} is already finished")
        self.commit()
        now = self._now()
        extra = list(token_ids[self._count :]) if token_ids is not None else []
        with self._transaction("finish a reply") as conn:
            conn.executemany(
                "INSERT INTO reply_tokens (reply_id, idx, token_id) VALUES (?, ?, ?)",
                [(self.reply_id, self._count + i, int(t)) for i, t in enumerate(extra)],
            )
            update_reply_row(
                conn,
                self.reply_id,
                {
                    "finish_reason": reason,
                    "error": error,
                    "stats": stats,
                    "finished": now,
                    "loop": loop,
                    "text": text,
                },
            )
            # The turn shows the branch it follows: `branch_id`, or (NULL) its first reply.
            conn.execute(
                "UPDATE messages SET content = ?1 WHERE id = ?2 AND coalesce(branch_id, "
                "(SELECT min(id) FROM replies WHERE message_id = ?2)) = ?3",
                (text, self.message_id, self.reply_id),
            )
            conn.execute("UPDATE chats SET updated = ? WHERE id = ?", (now, self.chat_id))
        self._count += len(extra)
        self._finished = True

    def finish_event(self, event: FinishedEvent) -> None:
        """Finish from the backend's FinishedEvent."""
        self.finish(
            event.reason,
            event.stats,
            event.text,
            error=event.error,
            token_ids=event.token_ids,
            loop=event.loop,
        )
