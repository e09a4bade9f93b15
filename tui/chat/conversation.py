"""The chat's state: what the model sees, this session's replies, and their record.

`Conversation` holds no widget: the chat view's handlers change it (UI thread only)
and draw it; a reply's job gets a copy of the messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from backend.chat.compare import common_prefix
from backend.chat.completion import Mode
from backend.chat.events import FinishedEvent, RewindEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.loop_watch import LoopGuard
from backend.session.phrase_bans import PhraseBans
from backend.session.run import Steer
from backend.store.recorded import StoreErrorNotices, recorded
from backend.store.recorder import ChatRecorder
from backend.store.store import ChatRecord
from sampling.settings.record import SamplerSettings
from tui.chat.beam_job import BeamJob
from tui.chat.reply import REJECTED, Reply
from tui.chat.reply_job import ReplyJob


class Conversation:
    """The messages, the replies with their tokens, and the recorder saving them.

    Args:
        system_prompt: An optional system message starting every chat.
    """

    def __init__(self, system_prompt: str | None = None) -> None:
        self.system_prompt = system_prompt
        self.messages: list[ChatMessage] = self._fresh_messages()
        """What the model sees: the turns so far."""
        self.replies: list[Reply] = []
        """This session's replies in the current chat, with their tokens."""
        self.finished: list[FinishedEvent] = []
        """Every reply's FinishedEvent, in order (for tests and benchmarks)."""
        self.recorder: ChatRecorder | None = None
        """Saves the conversation as it happens (None: nothing is saved)."""
        self.mode: Mode = "chat"
        """How replies are generated: chat turns, or one document continued."""
        self.reset_pending = False
        """Whether the backend's cache must be forgotten before the next reply."""
        self.bans = PhraseBans()
        """Phrases no reply may hold (each reply backtracks away from them)."""
        self.loops = LoopGuard()
        """What a repetition loop in a reply does (marked, by default)."""
        self.model = ""
        """The path of the loaded model's file: each new reply is tagged with it."""
        self._store_notices = StoreErrorNotices()

    def ask(self, text: str) -> None:
        """Add the user's turn."""
        self.messages.append(ChatMessage("user", text))

    def begin_reply(self, live: LiveSettings, max_tokens: int) -> tuple[Reply, ReplyJob]:
        """Start the assistant's reply: its record, and the job that generates it."""
        reply = Reply(
            seed=live.current.seed, settings=live.current, turn=len(self.messages), model=self.model
        )
        self.replies.append(reply)
        return reply, self._reply_job(live, max_tokens)

    def _reply_job(
        self,
        live: LiveSettings,
        max_tokens: int,
        steer: Steer | None = None,
        fork: tuple[int | None, int] | None = None,
    ) -> ReplyJob:
        """The job that generates the next reply of this conversation (a branch: with
        `steer` and `fork`)."""
        job = ReplyJob(
            list(self.messages),
            live,
            max_tokens,
            self.recorder,
            self._store_notices,
            reset=self.reset_pending,
            mode=self.mode,
            steer=steer,
            fork=fork,
            bans=self.bans,
            loops=self.loops,
        )
        self.reset_pending = False  # the job resets the backend before anything else
        return job

    def begin_beams(
        self, settings: SamplerSettings, max_tokens: int, width: int, length_penalty: float
    ) -> tuple[Reply, BeamJob]:
        """Start the assistant's reply by beam search: the best beam is the reply, the
        others join its turn's tree when it has finished (`add_beams`)."""
        reply = Reply(
            seed=settings.seed, settings=settings, turn=len(self.messages), model=self.model
        )
        self.replies.append(reply)
        job = BeamJob(
            list(self.messages),
            settings,
            max_tokens,
            width,
            length_penalty,
            self.recorder,
            self._store_notices,
            reset=self.reset_pending,
            mode=self.mode,
            bans=self.bans,
        )
        self.reset_pending = False
        return reply, job

    def add_beams(self, reply: Reply, job: BeamJob) -> None:
        """Add the beams other than the best to `reply`'s tree, each a branch of it
        from the first token where they part (after `finish_reply`)."""
        reply.branch_id = job.reply_id
        for beam in job.branches:
            at = common_prefix(
                [t.step.token_id for t in reply.tokens], [t.step.token_id for t in beam.tokens]
            )
            Reply(
                seed=reply.seed,
                settings=reply.settings,
                tokens=list(beam.tokens),
                finished=beam.reason,
                turn=reply.turn,
                branch_id=beam.branch_id,
                parent=reply,
                fork_at=at,
                tree=reply.tree,
                model=reply.model,
            )

    def begin_branch(
        self,
        live: LiveSettings,
        max_tokens: int,
        index: int,
        force: int | None,
        number: int | None = None,
        then: tuple[int, ...] = (),
    ) -> tuple[Reply, ReplyJob]:
        """A new branch of reply `number` (None: the last) from its token `index`: the
        tokens before it are kept, token `index` is `force` (None: drawn again with the
        live settings), the tokens `then` follow it (forced too: an explore path), the
        rest sampled. It replaces the reply, and cuts the turns
        after it; the old one stays in the reply's tree (and in the store, with the
        turns after it) as another branch of the turn.
        """
        number = len(self.replies) - 1 if number is None else number
        old = self.replies[number]
        del self.messages[old.turn :]
        if self.recorder is not None:
            self.recorder.cut(old.turn + 1)
        kept = old.tokens[:index]
        reply = Reply(
            seed=live.current.seed,
            settings=live.current,
            tokens=list(kept),
            turn=old.turn,
            parent=old,
            fork_at=index,
            tree=old.tree,  # it joins the tree as it is made
            model=self.model,
        )
        self.replies[number:] = [reply]
        # A fork at the start with nothing forced is a plain generation of the turn.
        steered = index > 0 or force is not None
        steer = Steer(tuple(token.step.token_id for token in kept), force, then)
        return reply, self._reply_job(
            live, max_tokens, steer if steered else None, (old.branch_id, index)
        )

    def follow(self, branch: Reply) -> None:
        """Show `branch` (of the last reply's turn) as the last reply: the conversation
        goes on from its text, and the store follows it too."""
        self.replies[-1] = branch
        self.messages[branch.turn] = ChatMessage("assistant", branch.text)
        if self.recorder is not None:
            self.recorder.follow(branch.branch_id)

    def rewind_reply(self, event: RewindEvent) -> Reply:
        """The running (last) reply went back to token `event.index`: what it drops
        becomes a ghost branch forking there (ghosts forking later from the tokens it
        drops become the new ghost's branches, as in the store).

        Returns:
            The ghost.
        """
        reply = self.replies[-1]
        at = event.index
        ghost = Reply(
            seed=reply.seed,
            settings=reply.settings,
            tokens=list(reply.tokens),
            finished=REJECTED,
            turn=reply.turn,
            parent=reply,
            fork_at=at,
            tree=reply.tree,
            model=reply.model,
        )
        for other in reply.tree:
            later = (other.fork_at or 0) > at
            if other.parent is reply and other.is_ghost and other is not ghost and later:
                other.parent = ghost
        reply.tokens = reply.tokens[:at]  # a new list: the views read it afresh
        reply.ghosts.append(ghost)
        return ghost

    def finish_reply(self, event: FinishedEvent) -> Reply:
        """The last reply ended: its text becomes the assistant's turn (an empty one
        included: it is stored and shown as such)."""
        self.finished.append(event)
        reply = self.replies[-1]
        reply.finished = event.reason
        reply.error = event.error or ""
        reply.loop = event.loop
        reply.context_tokens = event.stats.cached_tokens
        if self.recorder is not None:
            reply.branch_id = self.recorder.reply_id
            for ghost, ghost_id in zip(reply.ghosts, self.recorder.ghost_ids, strict=False):
                ghost.branch_id = ghost_id
        self.messages.append(ChatMessage("assistant", event.text))
        return reply

    def drop_last_reply(self) -> Reply | None:
        """Take the last reply out of the conversation and the store (to redo it)."""
        if not self.replies:
            return None
        reply = self.replies.pop()
        if self.messages and self.messages[-1].role == "assistant":
            self.messages.pop()
        if self.recorder is not None:
            self.recorder.discard_last_reply()
        return reply

    def made_elsewhere(self, reply: Reply) -> str | None:
        """Why `reply`'s tokens cannot be steered on the loaded model (another model made
        them: its ids mean other tokens here, and its record is another chat's), or None."""
        if not reply.model or not self.model or _same_file(reply.model, self.model):
            return None
        number = self.replies.index(reply) + 1 if reply in self.replies else None
        which = f"Reply {number}" if number is not None else "This reply"
        return (
            f"{which} was made by {Path(reply.model).name}, not by {Path(self.model).name}:"
            " its tokens cannot be branched, explored or recomputed on this model"
        )

    @property
    def ends_with_reply(self) -> bool:
        """Whether the last turn is a reply of this session."""
        last = len(self.messages) - 1
        if not self.replies or self.replies[-1].turn != last:
            return False
        return self.messages[last].role == "assistant"

    def restart(self, record: ChatRecord | None = None, replies: Sequence[Reply] = ()) -> None:
        """Start a new chat, or continue the stored `record` (the recorder has opened it)
        with its `replies` rebuilt from their records (`tui.chat.stored`).

        Either way the backend's cache is reset before the next reply.
        """
        self.messages = record.conversation() if record is not None else self._fresh_messages()
        self.replies[:] = replies
        self.reset_pending = True
        if record is None and self.recorder is not None:
            self.recorder.new_chat()

    def adopt_reply(
        self,
        settings: SamplerSettings,
        tokens: Sequence[TokenEvent],
        finished: FinishedEvent,
        max_tokens: int,
    ) -> Reply:
        """Add a reply generated elsewhere (a compare column) as the last one, and save
        it: a new branch of the last reply when the conversation ends with one."""
        reply = Reply(seed=settings.seed, settings=settings, tokens=list(tokens), model=self.model)
        reply.finished = finished.reason
        recorder = self.recorder
        if self.ends_with_reply:
            old = self.replies[-1]
            reply.turn, reply.parent, reply.fork_at, reply.tree = old.turn, old, 0, old.tree
            old.tree.append(reply)
            self.replies[-1] = reply
            self.messages[old.turn] = ChatMessage("assistant", finished.text)
            if recorder is not None:
                recorder.begin_branch(old.branch_id, 0, settings, decoding=finished.decoding)
        else:
            reply.turn = len(self.messages)
            self.replies.append(reply)
            question = list(self.messages)
            self.messages.append(ChatMessage("assistant", finished.text))
            if recorder is not None:
                recorder.begin_reply(
                    question, settings, max_tokens, self.mode, decoding=finished.decoding
                )
        if recorder is not None:
            for _ in recorded([*tokens, finished], recorder):
                pass
            reply.branch_id = recorder.reply_id
        return reply

    def _fresh_messages(self) -> list[ChatMessage]:
        return [ChatMessage("system", self.system_prompt)] if self.system_prompt else []


def _same_file(first: str, second: str) -> bool:
    """Whether two model paths name one file."""
    return first == second or Path(first).resolve() == Path(second).resolve()
