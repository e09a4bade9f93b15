"""The records the chat store hands out (frozen) and its error."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from backend.chat.events import GenerationStats
from backend.chat.protocol import ChatMessage, Role
from sampling.analysis.loops import Loop
from sampling.errors import SamplescopeError
from sampling.plugins import files_used
from sampling.settings.record import SamplerSettings

INTERRUPTED = "interrupted"
"""The finish reason of a reply whose process died before it finished."""
REJECTED = "rejected"
"""The finish reason of a ghost: an attempt a phrase ban rejected (the reply went
back to where it forks and on from there)."""


class StoreError(SamplescopeError):
    """The chat database is corrupt, locked, unreadable, or lacks what was asked.

    The message names the database file.
    """


@dataclass(frozen=True, slots=True)
class ModelRef:
    """Which model file produced something: enough to check it is the same file.

    Attributes:
        path: Absolute path of the GGUF file.
        size: Its size in bytes.
        sha256: Hex SHA-256 of its content.
    """

    path: str
    size: int
    sha256: str

    @property
    def name(self) -> str:
        """The file name, for lists."""
        return Path(self.path).name


TITLE_LENGTH = 60


def suggest_title(text: str) -> str:
    """A chat title from its first user message: one line, at most 60 characters."""
    line = " ".join(text.split())
    if len(line) <= TITLE_LENGTH:
        return line or "Untitled chat"
    return line[: TITLE_LENGTH - 1].rstrip() + "…"


def describe_error(path: Path, error: sqlite3.Error, action: str) -> str:
    """A one-line message for a sqlite error, naming the database file."""
    text = str(error)
    if "not a database" in text or "malformed" in text:
        return f"chat database {path} is corrupt or not a samplescope database ({text})"
    if "locked" in text or "busy" in text:
        return f"chat database {path} is locked by another process ({text})"
    if "unable to open" in text or "readonly" in text or "disk I/O" in text:
        return f"cannot {action} chat database {path}: {text}"
    return f"chat database {path}: {action} failed: {text}"


SAMPLER_FILES_KEY = "sampler_files"
"""The stored settings' key for the sampler plugins a reply ran: name → file SHA-256."""


def settings_json(settings: SamplerSettings) -> str:
    """Settings as stored: JSON of `to_dict()`, keys sorted, with the SHA-256 of each
    sampler plugin's file the order runs (under `SAMPLER_FILES_KEY`)."""
    values = settings.to_dict()
    used = files_used(settings)
    if used:
        values[SAMPLER_FILES_KEY] = used
    return json.dumps(values, sort_keys=True)


def file_sha256(path: Path, chunk_size: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's content, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def file_signature(path: Path) -> tuple[str, int, int]:
    """(absolute path, size, mtime in ns): what the hash cache is keyed by."""
    resolved = path.expanduser().resolve()
    stat = os.stat(resolved)
    return str(resolved), stat.st_size, stat.st_mtime_ns


@dataclass(frozen=True, slots=True)
class SettingsChange:
    """Settings in force from token `from_index` on (until the next change).

    `unknown` holds the values of sampler plug-ins not loaded in this process (name,
    stored JSON): they are shown as such, and the reply cannot run again.
    """

    from_index: int
    settings: SamplerSettings
    unknown: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ReplyRecord:
    """One generated assistant reply with everything needed to replay it.

    Attributes:
        id: The reply's id.
        number: 1-based number of the reply within its chat (what `--reply` takes).
        message_id: The assistant message holding its text.
        model: The model file that generated it.
        seed: The seed at the start of the reply.
        rng: The generator at the start ("pcg64" or "xorshift128").
        max_tokens: The token limit it ran with, when known.
        n_ctx: The backend's context size, when known.
        n_batch: The backend's prefill chunk size, when known.
        finish_reason: "eos", "max_tokens", "context_full", "cancelled", "error", or
            "interrupted" (the process died mid-reply; tokens and text are those
            stored so far), or "rejected" (a ghost: an attempt that held a banned
            phrase, kept as a branch where the reply went back).
        error: The error message when finish_reason is "error".
        stats: Its figures (None until finished).
        token_ids: The sampled token ids, in order.
        settings_changes: The settings at index 0 and at each index where they changed.
        text: The reply text (the text so far for an interrupted reply).
        created: When it started.
        finished: When it finished (None when interrupted).
        parent_id: The branch it forks from (None for a turn's first reply).
        fork_at: The token index where it leaves its parent (tokens before it are
            the parent's); None for a turn's first reply.
        mode: "chat" (the chat template) or "completion" (plain text continued).
        branch: 1-based number of this branch within its turn, in creation order.
        decoding: How it was decoded, as JSON (e.g. in lockstep with which sibling
            sequences); None: alone, one sequence.
        loop: The latest repetition loop found in it while it ran (None: none found,
            not watched for, or stored before schema 6).
        replay_problem: Why it cannot run again here (replayed, continued or branched
            from: a sampler plug-in it used is not loaded, or its file changed), or
            None. Reading, exporting and showing it work either way.
        control_vectors: The control vectors its model applied, as JSON
            (`control_vectors_json`); None: none (or stored before schema 9).
        contrast_model: The smaller model it was contrasted with (`--contrast-model`);
            None: none (or stored before schema 9).
        template_switches: The chat template's switches it was rendered with
            (`TemplateSwitches.to_json`: kwargs, reasoning effort, reasoning preserve);
            None: none set (or stored before schema 11).
    """

    id: int
    number: int
    message_id: int
    model: ModelRef
    seed: int
    rng: str
    max_tokens: int | None
    n_ctx: int | None
    n_batch: int | None
    finish_reason: str
    error: str | None
    stats: GenerationStats | None
    token_ids: tuple[int, ...]
    settings_changes: tuple[SettingsChange, ...]
    text: str
    created: datetime
    finished: datetime | None
    parent_id: int | None = None
    fork_at: int | None = None
    mode: str = "chat"
    branch: int = 1
    decoding: str | None = None
    loop: Loop | None = None
    replay_problem: str | None = None
    control_vectors: str | None = None
    contrast_model: ModelRef | None = None
    template_switches: str | None = None

    @property
    def is_ghost(self) -> bool:
        """Whether it is an attempt a phrase ban rejected (shown greyed)."""
        return self.finish_reason == REJECTED

    @property
    def interrupted(self) -> bool:
        """Whether the process died before the reply finished."""
        return self.finish_reason == INTERRUPTED

    def settings_at(self, index: int) -> SamplerSettings:
        """The settings in force for token `index`."""
        current = self.settings_changes[0].settings
        for change in self.settings_changes:
            if change.from_index > index:
                break
            current = change.settings
        return current


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """One turn of a stored chat; assistant turns that were generated carry a reply.

    `reply` is the branch the conversation follows (its text is `content`);
    `branches` holds every branch of the turn (the reply tree), oldest first;
    `after_reply_id` is the branch of the previous generated turn this turn was
    added after (None before the chat's first generated turn).
    """

    id: int
    position: int
    role: Role
    content: str
    created: datetime
    reply: ReplyRecord | None = None
    branches: tuple[ReplyRecord, ...] = ()
    after_reply_id: int | None = None


@dataclass(frozen=True, slots=True)
class ChatRecord:
    """A whole stored chat.

    Attributes:
        id: The chat's id.
        title: Its title.
        created: When it was created.
        updated: When it last changed.
        model: The model it was started with (None if not recorded).
        messages: Its turns on screen in order: those along the branches it follows.
        hidden: Its stored turns off screen, in order: continuations of branches of
            earlier replies the chat no longer follows.
    """

    id: int
    title: str
    created: datetime
    updated: datetime
    model: ModelRef | None
    messages: tuple[MessageRecord, ...]
    hidden: tuple[MessageRecord, ...] = ()

    @property
    def stored_messages(self) -> tuple[MessageRecord, ...]:
        """Every stored turn, on screen or not, in position order."""
        return tuple(sorted(self.messages + self.hidden, key=lambda m: m.position))

    @property
    def replies(self) -> tuple[ReplyRecord, ...]:
        """The generated replies in order (reply N is `replies[N - 1]`)."""
        return tuple(m.reply for m in self.messages if m.reply is not None)

    def conversation(self) -> list[ChatMessage]:
        """Every turn as the backend takes it (to continue the chat)."""
        return [ChatMessage(m.role, m.content) for m in self.messages]

    def conversation_before(self, reply: ReplyRecord) -> list[ChatMessage]:
        """The turns before `reply`: what the model saw when it generated it."""
        turns: list[ChatMessage] = []
        for message in self.messages:
            if message.id == reply.message_id:
                return turns
            turns.append(ChatMessage(message.role, message.content))
        raise StoreError(f"reply {reply.id} is not part of chat {self.id}")


@dataclass(frozen=True, slots=True)
class ChatSummary:
    """One line of the chat list.

    Attributes:
        id: The chat's id.
        title: Its title.
        created: When it was created.
        updated: When it last changed.
        model_path: The model it was started with ("" if not recorded).
        message_count: How many turns it has.
        reply_count: How many of its turns were generated (a turn regenerated or
            branched counts once).
        branch_count: How many replies it holds, every branch of every turn counted.
        sweep_id: The sweep it is a sample of (None: a chat of its own).
    """

    id: int
    title: str
    created: datetime
    updated: datetime
    model_path: str
    message_count: int
    reply_count: int
    branch_count: int = 0
    sweep_id: int | None = None

    @property
    def model_name(self) -> str:
        """The model's file name ("" if not recorded)."""
        return Path(self.model_path).name if self.model_path else ""


def control_vectors_json(
    vectors: tuple[tuple[str, float], ...], layers: tuple[int, int] | None
) -> str | None:
    """Control vectors as a reply stores them: `{"vectors": [{"path", "scale"}],
    "layers": [first, last] or null}`; None for no vector."""
    if not vectors:
        return None
    shown = [{"path": path, "scale": scale} for path, scale in vectors]
    return json.dumps({"vectors": shown, "layers": None if layers is None else list(layers)})


def recorded_control_vectors(
    text: str | None,
) -> tuple[tuple[tuple[str, float], ...], tuple[int, int] | None]:
    """The stored control vectors' files with their scales, and the layers.

    Raises:
        ValueError: The JSON cannot be read as control vectors.
    """
    if text is None:
        return (), None
    try:
        values = json.loads(text)
        vectors = tuple((str(v["path"]), float(v["scale"])) for v in values["vectors"])
        layers = values.get("layers")
        return vectors, None if layers is None else (int(layers[0]), int(layers[1]))
    except (ValueError, TypeError, KeyError, IndexError) as error:
        raise ValueError(f"its control vectors cannot be read ({error})") from None
