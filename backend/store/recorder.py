"""Save an app session's chat as it happens: the glue between a chat UI and the store.

The app keeps its conversation as a list of `ChatMessage`; the recorder mirrors that
list into the store, so the stored chat is exactly what the model saw:

    recorder = ChatRecorder.of_model(store, backend.info)   # its path, context, adapters

    # generation worker thread, before backend.generate(messages, live, ...):
    recorder.begin_reply(messages, live.current, max_tokens)
    for event in backend.generate(messages, live, ...):
        recorder.record(event)          # every event; commits every RECORD_COMMIT_EVERY s
        post_message(...)
    # UI thread, when no generation runs:
    recorder.new_chat()                 # ctrl+n (the next reply starts a new chat)
    recorder.begin_branch(parent_id, at, settings)   # worker: a branch of a stored reply
    recorder.follow(reply_id)           # UI thread: the turn follows another branch
    record = recorder.open_chat(chat_id)   # from the history screen;
    messages = record.conversation()       # then reset the backend's cache

Writes happen in the worker thread so the store never lags far behind the model (a
killed process loses at most the tokens of the last RECORD_COMMIT_EVERY seconds) and
so hashing a model file the
first time (seconds for a large GGUF; cached afterwards) never blocks the UI.

A failing database never stops a generation: every method catches StoreError,
keeps the message in `error` (show it once) and returns False; the rest of that
reply is not recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from backend.chat.events import Decoding, FinishedEvent, GenerationEvent, RewindEvent, TokenEvent
from backend.chat.protocol import ChatMessage, ModelInfo
from backend.store.records import control_vectors_json
from backend.store.store import (
    ChatRecord,
    ChatStore,
    Fork,
    ModelRef,
    ReplyWriter,
    StoreError,
    suggest_title,
)
from sampling.settings.record import SamplerSettings

RECORD_COMMIT_EVERY = 0.25
"""Seconds between the commits of a reply's tokens (a killed process loses at most
these): one commit a token costs the generation thread several percent of its speed
(measured in `samplescope bench --only tui`)."""


class ChatRecorder:
    """Mirrors one app's conversation into a `ChatStore`.

    Args:
        store: The chat database.
        model_path: The loaded model's file (hashed on the first reply).
        n_ctx: The backend's context size (recorded for exact replay).
        n_batch: The backend's prefill chunk size (recorded for exact replay).
        control_vectors: The control vectors the model applies, as a reply stores
            them (`control_vectors_json`; None: none).
        contrast_model: The smaller model contrast decodes beside it (None: none).
    """

    def __init__(
        self,
        store: ChatStore,
        model_path: Path | str,
        *,
        n_ctx: int | None = None,
        n_batch: int | None = None,
        control_vectors: str | None = None,
        contrast_model: Path | str | None = None,
    ) -> None:
        self.store = store
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.control_vectors = control_vectors
        self.template_switches: Callable[[], str | None] = lambda: None
        """The chat template's switches in force as a new reply records them
        (`TemplateSwitches.to_json`), asked at each reply's start."""
        self.contrast_path = None if contrast_model is None else Path(contrast_model)
        self._contrast: ModelRef | None = None  # hashed with the model, on the first reply
        self.chat_id: int | None = None
        """The chat being recorded (None until the first reply of a new chat)."""
        self.error: str | None = None
        """The last store error's message (the app shows it and may clear it)."""
        self._model: ModelRef | None = None
        self._stored = 0  # how many of the app's messages are in the store
        self._writer: ReplyWriter | None = None
        self._last_counted = False  # whether the last reply became a stored turn
        self._branching = False  # whether the open writer records a branch
        self.ghost_ids: list[int] = []
        """The ghosts of the reply recorded last (attempts a phrase ban rejected)."""

    @classmethod
    def of_model(
        cls,
        store: ChatStore,
        info: ModelInfo,
        template_switches: Callable[[], str | None] | None = None,
    ) -> ChatRecorder:
        """A recorder for the loaded model `info` describes: its file, its context and
        prefill chunk size, its control vectors and its contrast model, and the chat
        template's switches as `template_switches` gives them at each reply's start
        (each recorded with every reply, for exact replay)."""
        recorder = cls(
            store,
            info.path,
            n_ctx=info.n_ctx,
            n_batch=info.n_batch,
            control_vectors=control_vectors_json(info.control_vectors, info.control_layers),
            contrast_model=info.contrast_model or None,
        )
        if template_switches is not None:
            recorder.template_switches = template_switches
        return recorder

    def use_contrast(self, path: Path | str | None) -> None:
        """The contrast model the next replies record (loaded or dropped in the app;
        None: none)."""
        self.contrast_path = None if path is None else Path(path)
        self._contrast = None

    def _contrast_ref(self) -> ModelRef | None:
        """The contrast model a reply records (hashed on the first reply, as the model)."""
        if self.contrast_path is not None and self._contrast is None:
            self._contrast = self.store.model_ref(self.contrast_path)
        return self._contrast

    def _fail(self, error: StoreError) -> bool:
        self.error = str(error)
        self._writer = None
        return False

    def new_chat(self) -> None:
        """Start afresh: the next reply creates a new chat."""
        self.chat_id = None
        self._stored = 0
        self._writer = None
        self._last_counted = False

    def open_chat(self, chat_id: int) -> ChatRecord:
        """Continue a stored chat; the app's messages become `record.conversation()`.

        Raises:
            StoreError: The chat cannot be loaded (the recorder is unchanged).
        """
        record = self.store.load_chat(chat_id)
        self.new_chat()
        self.chat_id = record.id
        self._stored = len(record.messages)
        return record

    def begin_reply(
        self,
        messages: Sequence[ChatMessage],
        settings: SamplerSettings,
        max_tokens: int,
        mode: str = "chat",
        decoding: Decoding | str | None = None,
    ) -> bool:
        """Store the turns not stored yet, then open the reply's record.

        Args:
            messages: The conversation handed to `generate` (ending with the user's turn).
            settings: The settings at the start of the reply.
            max_tokens: The generation's token limit.
            mode: "chat" or "completion" (the last message's text continued as is).
            decoding: How it is decoded when beside siblings (None: alone), or a
                record as stored (a beam search's, `backend.session.beam_result.beam_decoding`).
        """
        self._writer = None
        self.ghost_ids = []
        if self.error is not None:
            return False  # a database that failed once is never written to again
        try:
            if self._model is None:
                self._model = self.store.model_ref(self.model_path)
            if self.chat_id is None:
                first_user = next((m.content for m in messages if m.role == "user"), "")
                self.chat_id = self.store.new_chat(suggest_title(first_user), self._model)
                self._stored = 0
            for message in messages[self._stored :]:
                self.store.add_message(self.chat_id, message.role, message.content)
                self._stored += 1  # counted one by one: a failure halfway stores none twice
            self._writer = self.store.begin_reply(
                self.chat_id,
                self._model,
                settings,
                max_tokens=max_tokens,
                n_ctx=self.n_ctx,
                n_batch=self.n_batch,
                mode=mode,
                decoding=_decoding_json(decoding),
                commit_every=RECORD_COMMIT_EVERY,
                control_vectors=self.control_vectors,
                contrast_model=self._contrast_ref(),
                template_switches=self.template_switches(),
            )
        except StoreError as error:
            return self._fail(error)
        self._last_counted = False
        self._branching = False
        return True

    @property
    def reply_id(self) -> int | None:
        """The stored id of the reply recorded last (None: it was not recorded)."""
        return self._writer.reply_id if self._writer is not None else None

    def begin_branch(
        self,
        parent_id: int | None,
        at: int,
        settings: SamplerSettings,
        *,
        text: str = "",
        follow: bool = True,
        decoding: Decoding | str | None = None,
    ) -> bool:
        """Open a branch of stored reply `parent_id` from its token `at`.

        The parent is kept in the store (see `backend.store.branches`); the branch's
        record takes tokens from index `at` on, its text starting with `text` (the
        parent's before the fork); the turn follows it when `follow`; `decoding` says
        how it is decoded when beside siblings (None: alone). The turn stays
        counted as stored. A parent that was not recorded (None) has no recorded
        branch either.
        """
        self._writer = None
        self.ghost_ids = []
        if self.error is not None:
            return False
        if parent_id is None or self.chat_id is None:
            return True
        try:
            if self._model is None:
                self._model = self.store.model_ref(self.model_path)
            chat = self.store.load_chat(self.chat_id)
            branches = (b for m in chat.messages for b in m.branches)
            parent = next((b for b in branches if b.id == parent_id), None)
            if parent is None:
                raise StoreError(f"reply {parent_id} is no longer stored")
            self._writer = self.store.begin_reply(
                self.chat_id,
                self._model,
                settings,
                max_tokens=parent.max_tokens,
                n_ctx=self.n_ctx,
                n_batch=self.n_batch,
                mode=parent.mode,
                fork=Fork(parent, at, text, follow=follow),
                decoding=_decoding_json(decoding),
                commit_every=RECORD_COMMIT_EVERY,
                control_vectors=self.control_vectors,
                contrast_model=self._contrast_ref(),
                template_switches=self.template_switches(),
            )
        except StoreError as error:
            return self._fail(error)
        self._branching = True
        return True

    def cut(self, count: int) -> None:
        """The app's conversation was cut after its first `count` turns (a branch of an
        earlier reply): its next turns are stored after those (the store shows the
        turns along the branches followed, so the cut ones stay stored, not shown)."""
        self._stored = min(self._stored, count)

    def follow(self, reply_id: int | None) -> bool:
        """Make the conversation follow stored branch `reply_id` of its turn."""
        if self.error is not None or reply_id is None or self.chat_id is None:
            return self.error is None
        try:
            self.store.follow_branch(self.chat_id, reply_id)
        except StoreError as error:
            return self._fail(error)
        return True

    def record(self, event: GenerationEvent) -> bool:
        """Store a generation event (tokens, rewinds and the finish; others are ignored).

        A rewind keeps the rejected attempt as a ghost branch (`ghost_ids`). A reply
        that finishes with no text stays stored, as an empty turn: what was said to be
        saved stays saved.
        """
        writer = self._writer
        if writer is None:
            return self.error is None
        try:
            if isinstance(event, TokenEvent):
                writer.append(event)
            elif isinstance(event, RewindEvent):
                self.ghost_ids.append(writer.rewind(event))
            elif isinstance(event, FinishedEvent):
                writer.finish_event(event)
                # A branch's turn is stored and counted already, with its other branches.
                if self._branching:
                    return True
                self._stored += 1
                self._last_counted = True
        except StoreError as error:
            return self._fail(error)
        return True

    def revise(self, at: int) -> bool:
        """Take back the open reply's tokens from index `at` on (a draft: see
        `ReplyWriter.revise`)."""
        writer = self._writer
        if writer is None:
            return self.error is None
        try:
            writer.revise(at)
        except StoreError as error:
            return self._fail(error)
        return True

    def commit(self) -> bool:
        """Commit the open reply's tokens now (not after RECORD_COMMIT_EVERY seconds)."""
        writer = self._writer
        if writer is None:
            return self.error is None
        try:
            writer.commit()
        except StoreError as error:
            return self._fail(error)
        return True

    def discard_last_reply(self) -> bool:
        """Delete the last reply (the app is about to regenerate it)."""
        writer, self._writer = self._writer, None
        if writer is None:
            return True
        try:
            self.store.delete_message(writer.message_id)
        except StoreError as error:
            return self._fail(error)
        if self._last_counted:
            self._stored -= 1
        self._last_counted = False
        return True


def _decoding_json(decoding: Decoding | str | None) -> str | None:
    """A reply's `decoding` record as stored (a string is one already)."""
    if decoding is None or isinstance(decoding, str):
        return decoding
    return decoding.to_json()
