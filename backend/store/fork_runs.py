"""Two stored replies of one prompt, named on the command line, and where they fork.

A reply is named `CHAT` (the chat's last reply, the branch it shows), `CHAT:N` (its
reply N, from 1), `CHAT:N:BRANCH` or `CHAT::BRANCH` (a branch by its id, as
`samplescope tree` lists it). Two replies compare token by token only when they answer
the same conversation in the same mode with the same vocabulary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from backend.chat.protocol import ChatMessage
from backend.errors import ModelFileError
from backend.llama.gguf import read_gguf
from backend.llama.vocab_match import VocabularyMismatch, check_same_gguf_vocabulary
from backend.store.lookup import find_branch
from backend.store.records import ChatRecord, ReplyRecord, StoreError
from backend.store.store import ChatStore
from sampling.analysis.fork import Fork, find_fork
from sampling.records import Step

_REF = re.compile(r"^(\d+)(?::(\d*)(?::(\d+))?)?$")


@dataclass(frozen=True, slots=True)
class RunRef:
    """A stored reply as named: chat, reply number (None: the last, or the one holding
    the branch), branch id (None: the one the chat shows)."""

    chat_id: int
    reply: int | None
    branch: int | None

    def __str__(self) -> str:
        if self.branch is not None:
            return f"{self.chat_id}:{self.reply or ''}:{self.branch}"
        return f"{self.chat_id}" + (f":{self.reply}" if self.reply is not None else "")


def parse_run_ref(text: str) -> RunRef:
    """`CHAT`, `CHAT:N`, `CHAT:N:BRANCH` or `CHAT::BRANCH`.

    Raises:
        StoreError: It is none of these.
    """
    match = _REF.match(text.strip())
    if match is None or (match.group(2) == "" and match.group(3) is None):
        raise StoreError(
            f"invalid reply {text!r}: expected CHAT, CHAT:N, CHAT:N:BRANCH or CHAT::BRANCH"
            " (ids as `samplescope history` and `samplescope tree` list them)"
        )
    chat, reply, branch = match.groups()
    return RunRef(int(chat), int(reply) if reply else None, int(branch) if branch else None)


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A stored reply with what a fork needs of it.

    Attributes:
        ref: How it was named.
        chat: Its chat.
        reply: The branch.
        steps: Its per-token records by index (missing for replies stored without).
        pieces: The text each token added, by index.
    """

    ref: RunRef
    chat: ChatRecord
    reply: ReplyRecord
    steps: dict[int, Step]
    pieces: dict[int, str]

    @property
    def prompt(self) -> tuple[tuple[str, str], ...]:
        """The turns it answers, as (role, content)."""
        turns: list[ChatMessage] = self.chat.conversation_before(self.reply)
        return tuple((turn.role, turn.content) for turn in turns)

    def describe(self) -> str:
        """One line: chat, reply, the branch (its number among the reply's branches,
        and its id, which `CHAT::BRANCH` takes) and model."""
        return (
            f"chat {self.chat.id}, reply {self.reply.number}, {self.branch_words()}"
            f" ({self.reply.model.name})"
        )

    def branch_words(self) -> str:
        """ "branch 2 of 3 (id 57)", or "branch id 57" when the turn is not on record."""
        for message in self.chat.stored_messages:
            ids = [branch.id for branch in message.branches]
            if self.reply.id in ids:
                return f"branch {ids.index(self.reply.id) + 1} of {len(ids)} (id {self.reply.id})"
        return f"branch id {self.reply.id}"


def load_run(store: ChatStore, ref: RunRef) -> StoredRun:
    """The reply `ref` names, with its steps and pieces.

    Raises:
        StoreError: No such chat, reply or branch.
    """
    chat = store.load_chat(ref.chat_id)
    if ref.reply is None and ref.branch is not None:
        reply = _branch_anywhere(chat, ref.branch)
    else:
        reply = find_branch(chat, ref.reply, ref.branch)
    return StoredRun(
        ref, chat, reply, store.load_steps(chat, reply), store.load_pieces(chat, reply)
    )


def _branch_anywhere(chat: ChatRecord, branch_id: int) -> ReplyRecord:
    for message in chat.stored_messages:
        for branch in message.branches:
            if branch.id == branch_id:
                return branch
    raise StoreError(f"chat {chat.id} has no branch {branch_id} (see `samplescope tree {chat.id}`)")


def check_comparable(first: StoredRun, second: StoredRun) -> None:
    """Raise unless the two replies answer one prompt, in one mode, with one vocabulary.

    Raises:
        StoreError: The prompts or modes differ.
        VocabularyMismatch: The models' vocabularies differ, or one model file is gone
            and the two files are not the same one.
    """
    if first.reply.mode != second.reply.mode:
        raise StoreError(
            f"reply {first.ref} is in {first.reply.mode} mode and {second.ref} in"
            f" {second.reply.mode} mode: their tokens do not follow the same prompt"
        )
    if first.prompt != second.prompt:
        raise StoreError(
            f"replies {first.ref} and {second.ref} answer different conversations: a fork"
            " compares two replies of one prompt"
        )
    a, b = first.reply.model, second.reply.model
    if a.sha256 == b.sha256:
        return
    for ref in (a, b):
        if not Path(ref.path).is_file():
            raise VocabularyMismatch(
                f"the replies come from two model files and {ref.path} is gone: their"
                " vocabularies cannot be checked to be the same"
            )
    try:
        check_same_gguf_vocabulary(read_gguf(a.path), read_gguf(b.path), (a.name, b.name))
    except ModelFileError as error:
        raise VocabularyMismatch(f"the vocabularies cannot be compared: {error}") from None


def fork_of(first: StoredRun, second: StoredRun, threshold: float) -> Fork:
    """Where the two replies part, with each one's step there."""
    ids = (first.reply.token_ids, second.reply.token_ids)
    fork = find_fork(ids, (None, None), threshold)
    if fork.index is None:
        return fork
    steps = (first.steps.get(fork.index), second.steps.get(fork.index))
    return find_fork(ids, steps, threshold)
