"""The one generation loop: prompt → prefill → decode → sample, for one sequence or many.

Every generation (a chat reply, a compare's columns, the command line, a branch,
what-if's rebuilt step, a replay) runs here, over the narrow `Model` protocol:

- **prefill**: the prompt goes into sequence 0 as every generation's does
  (`backend.session.session.Session.prepare`: reusing what the memory already holds,
  in n_batch chunks with progress after each and a cancel check between them); a
  steer's given tokens follow, each decoded alone;
- **many sequences in lockstep**: the other sequences share the prompt through
  `seq_cp`, then every step decodes one token of every live sequence in one batch
  (one `llama_decode`); each sequence has its own sampler and random stream. The
  sampling is this loop's strategy (`backend.session.strategy`): each step it names
  the sequences' tokens and the loop decodes them, as it does for beam search's and
  explore's;
- **a second distribution**: a sequence whose settings switch guidance on gets its
  negative prompt decoded beside it in a sequence of its own, extended with each of its
  tokens in the same decode (`backend.session.negative`); with a contrast model, every
  sequence has a twin there fed the same tokens (`backend.session.contrast_model`);
  their logits reach the sequence's sampler with each step;
- **rewind**: between events, `Generation.rewind(number, k)` drops a sequence's last
  k tokens, from the memory and from its sampler's state, and the loop goes on from
  there, the dropped position computed again the way it was first computed.

Events come as (sequence number, event) pairs: each sequence's stream is the
`backend.chat.protocol.ChatBackend.generate` contract (ending in one FinishedEvent).
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator, Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np

from backend.chat.events import (
    Decoding,
    FinishReason,
    GenerationEvent,
    NoticeEvent,
    PhaseEvent,
    TokenEvent,
)
from backend.chat.protocol import LiveSettings
from backend.error_log import logged_line
from backend.llama.context import Layout
from backend.session.contrast_model import NO_TWINS, Twins
from backend.session.negative import (
    GUIDANCE_LATE,
    Negative,
    NegativeSource,
    negative_extend,
    prefill_negative,
)
from backend.session.run import LoopSequence, Steer
from backend.session.session import PromptSource, Room, Session
from backend.session.strategy import Extend, Plan, run
from sampling.errors import GrammarDeadEnd, SamplescopeError
from sampling.sampler import Sampler
from sampling.samplers.contrast import Contrast
from sampling.samplers.guidance import Guidance
from sampling.samplers.reasoning_budget import ReasoningBudgetParams

Event = tuple[int, GenerationEvent]
"""An event of one sequence of a generation: (the sequence's number, the event)."""

T = TypeVar("T")


class Generation:
    """One run of the loop; iterate for its (sequence number, event) pairs. See the module doc.

    Args:
        session: The model and its memory.
        prompt: Gives the prompt's tokens and fitting notices.
        lives: Each sequence's settings (seeded from them at the start).
        max_tokens: Stop each sequence after this many tokens (given ones included).
        cancel: When set, stop within one step or one prefill chunk.
        steer: Every sequence starts with its given tokens; its forced token is
            every sequence's first sampled one.
        rewindable: Keep each sampler's state before every token, so that
            `Generation.rewind` can go back (about 10 µs a token).
        layout: How the sequences' memory is laid out (None: the model's own; one
            sequence then decodes in the chat's context, several each in its own
            KV stream).
        streams: Decode in a context of at least this many sequences (an explore
            tree grows from the generation's end).
        extra_cells: Cells each sequence needs past the prompt and max_tokens.
        hold: Keep a lockstep context after the generation (else the memory goes
            back to the chat's context when it ends).
        negative: Gives a guided sequence's negative prompt tokens (None: no sequence
            is guided).
        companion: A smaller model that decodes every sequence's text in step (contrast;
            `backend.session.contrast_model`), or None.
        thinking_tags: The chat template's thinking tags, which settings that name
            none take (`Sampler`); none in completion mode.

    Raises:
        SamplescopeError: No sequence, or more than the model holds.
    """

    def __init__(
        self,
        session: Session,
        prompt: PromptSource,
        lives: Sequence[LiveSettings],
        *,
        max_tokens: int,
        cancel: threading.Event | None = None,
        steer: Steer | None = None,
        rewindable: bool = False,
        layout: Layout | None = None,
        streams: int = 0,
        extra_cells: int = 0,
        hold: bool = False,
        negative: NegativeSource | None = None,
        companion: Session | None = None,
        thinking_tags: tuple[str, ...] = (),
    ) -> None:
        if not lives:
            raise SamplescopeError("nothing to generate: no sequence asked for")
        model = session.model
        guided = [
            number
            for number, live in enumerate(lives)
            if negative is not None and Guidance.is_on(live.current)
        ]
        if len(lives) + len(guided) > model.n_seq_max:
            extra = f" (and {len(guided)} negative prompts beside them)" if guided else ""
            raise SamplescopeError(
                f"{len(lives)} sequences at once{extra}: this model holds {model.n_seq_max}"
            )
        self.negative = negative
        self.negatives = {number: Negative(len(lives) + k) for k, number in enumerate(guided)}
        """Each guided sequence's negative sequence, by the sequence's number."""
        self._told: set[int] = set()
        """The sequences told that guidance switched on mid-reply has no negative prompt
        (its number), or that contrast has no smaller model (-1 - its number)."""
        steer = steer or Steer()
        self.session = session
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.cancel = cancel
        self.steer = steer
        self.room = Room(layout, max(streams, len(lives) + len(guided)), extra_cells, hold)
        self.twins = None if companion is None else Twins(companion, len(lives))
        """The smaller model's copies of the sequences (contrast), or None."""
        self.layout = self.room.layout or Layout(repack=model.repack)
        """How the sequences' memory is laid out (what a lockstep reply records)."""
        started = session.clock()
        self.start_settings = tuple(live.current for live in lives)
        """Each sequence's settings at the start (what a lockstep reply records)."""
        self.sequences = [
            LoopSequence(
                number,
                number,
                live,
                Sampler(
                    live.current,
                    vocab_size=model.n_vocab,
                    vocabulary=model,
                    thinking_tags=thinking_tags,
                ),
                started,
                given=len(steer.prefix),
                rewindable=rewindable,
            )
            for number, live in enumerate(lives)
        ]
        for sequence in self.sequences:
            sequence.sampler.resume(sequence.given)  # min_tokens counts the given tokens
        self._logits: list[np.ndarray] = []
        """The last step's logits, one per sequence decoded in it (`row` says which)."""

    @property
    def _cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def rewind(self, number: int, count: int) -> None:
        """Drop the last `count` sampled tokens of sequence `number` (between events).

        Its memory is cut back to where the batch that computed the last kept token
        began, and that batch's tokens are decoded again with the next step, so the
        logits are the ones the sampler saw there.

        Raises:
            RewindError: The sequence ended, or sampled fewer tokens.
        """
        sequence = self.sequences[number]
        memory = self.session.memory
        keep = sequence.rewind(count, self.session.model.token_bytes)
        wanted = memory.tokens(sequence.seq_id)[: sequence.prompt_tokens] + sequence.token_ids
        wanted = wanted[: sequence.prompt_tokens + keep]
        start, _ = memory.batch_of(len(wanted) - 1, sequence.seq_id)
        memory.keep(start, sequence.seq_id)
        sequence.pending = wanted[start:]
        sequence.row = None

    def end(self, number: int, reason: FinishReason, error: str | None = None) -> None:
        """End sequence `number` where it stands (between events); its FinishedEvent
        comes when the generation ends (with `error`, for the reason "error")."""
        sequence = self.sequences[number]
        if sequence.reason is None:
            sequence.reason, sequence.error = reason, error
            sequence.pending = []
            sequence.row = None

    def end_after(self, number: int, reason: FinishReason) -> None:
        """End sequence `number` after its latest token (between events), unless a
        rewind drops that token first: a check after a token (a loop found) lets the
        checks after it (a phrase ban going back) have their say."""
        sequence = self.sequences[number]
        if sequence.reason is None:
            sequence.ending = reason

    def __iter__(self) -> Iterator[Event]:
        error: str | None = None
        try:
            ready = yield from self._prepare()
            if ready:
                yield from run(self.session.memory, self._decode())
            else:
                self._end_all("cancelled")
        except SamplescopeError as failure:
            error = str(failure)
        except Exception as failure:  # a bug: never crash the caller, log and report it
            error = logged_line(failure)
        if error is not None:
            self._end_all("error")
        for sequence in self.sequences:
            yield from self._finish(sequence, error if sequence.reason == "error" else None)
        memory = self.session.memory
        for sequence in self.sequences:
            memory.drop(sequence.seq_id)
        for negative in self.negatives.values():
            memory.drop(negative.seq_id)
        if self.twins is not None:
            self.twins.close()
        if not self.room.hold and not memory.model.lost:
            memory.reserve(1, 0)  # a lockstep context is freed: the chat's comes back

    # ---- the phases ---------------------------------------------------------------

    def _each(self, event: GenerationEvent) -> Iterator[Event]:
        for sequence in self.sequences:
            yield sequence.number, event

    def _tagged(self, events: Generator[GenerationEvent, None, T]) -> Generator[Event, None, T]:
        """Every sequence's copy of each event; the generator's value."""
        while True:
            try:
                event = next(events)
            except StopIteration as done:
                value: T = done.value
                return value
            yield from self._each(event)

    def _prepare(self) -> Generator[Event, None, bool]:
        """Check, fit and prefill the prompt, decode the given tokens, share them.

        Returns (as the generator's value): False when cancelled during the prefill.
        """
        session, steer = self.session, self.steer
        model, memory = session.model, session.memory
        if self.max_tokens < 1:
            raise SamplescopeError(f"invalid max_tokens={self.max_tokens}: expected at least 1")
        if len(steer.prefix) >= self.max_tokens:
            raise SamplescopeError(
                f"a reply of {len(steer.prefix)} given tokens leaves no room under "
                f"max_tokens={self.max_tokens}"
            )
        for settings in self.start_settings:
            budget = settings.of(ReasoningBudgetParams).reasoning_budget
            if budget > model.n_ctx:
                raise SamplescopeError(
                    f"invalid reasoning_budget={budget}: beyond the context of {model.n_ctx}"
                    " tokens (the thinking could never spend it)"
                )
        for forced in (steer.force, *steer.then):
            if forced is not None and not 0 <= forced < model.n_vocab:
                raise SamplescopeError(
                    f"invalid token id {forced}: expected 0 .. {model.n_vocab - 1}"
                )
        self._negative_prompts()
        prepared = yield from self._tagged(
            session.prepare(self.prompt, self.max_tokens, self.room, self.cancel)
        )
        prompt, prefilled, prefill_ms = prepared.prompt, prepared.prefilled, prepared.prefill_ms
        for sequence in self.sequences:
            sequence.prompt_tokens, sequence.prefilled, sequence.prefill_ms = (
                len(prompt),
                prefilled,
                prefill_ms,
            )
        if prepared.cancelled:
            return False
        # The given start of the reply: decoded alone, as a generation decodes it.
        for token in steer.prefix:
            if len(memory.tokens()) >= model.n_ctx:
                raise SamplescopeError(f"the given tokens overflow the context of {model.n_ctx}")
            memory.append([token])
        if self.twins is not None:
            self.twins.prepare(prompt, self.max_tokens, self.room, steer.prefix)
        if self.negatives:  # the prompt's logits, kept while the negative prompts go in
            self._logits = [np.array(model.logits(-1), copy=True)]
            for negative in self.negatives.values():
                negative.prompt = negative.prompt or prompt[-1:]
                prefill_negative(memory, negative, steer.prefix)
        for sequence in self.sequences:
            for token in steer.prefix:
                eog = model.is_eog(token)
                sequence.give(token, "" if eog else sequence.stream.feed(model.token_bytes(token)))
            if sequence.seq_id:
                memory.fork(sequence.seq_id)
            if self.negatives:
                sequence.row = 0
        return True

    def _negative_prompts(self) -> None:
        """Tokenize each guided sequence's negative prompt, and make room for it.

        Raises:
            SamplescopeError: A negative prompt leaves no room for the reply.
        """
        if not self.negatives or self.negative is None:
            return
        model = self.session.model
        longest = 0
        for number, negative in self.negatives.items():
            negative.prompt = self.negative(self.sequences[number].live.current)
            if len(negative.prompt) + self.max_tokens > model.n_ctx:
                raise SamplescopeError(
                    f"the negative prompt's {len(negative.prompt)} tokens and"
                    f" max_tokens={self.max_tokens} overflow the context of {model.n_ctx}"
                )
            longest = max(longest, len(negative.prompt))
        self.room = replace(self.room, extra_cells=self.room.extra_cells + longest)

    def _decode(self) -> Generator[Event | Plan, list[np.ndarray], None]:
        """The sampled strategy: each step, every live sequence's sampled token (or
        what a rewind left to decode again), until each has ended."""
        session = self.session
        model, memory = session.model, session.memory
        yield from self._each(PhaseEvent("decode"))
        now = session.clock()
        for sequence in self.sequences:
            sequence.decode_started = now
        while True:
            if self._cancelled:
                self._end_all("cancelled")
                return
            for sequence in self.sequences:
                if sequence.reason is None and sequence.row is not None:
                    yield from self._sample(sequence)
            stepping = [
                sequence
                for sequence in self.sequences
                if sequence.reason is None and sequence.pending
            ]
            if not stepping:
                return
            partners = [
                (sequence, negative)
                for sequence in stepping
                if (negative := self.negatives.get(sequence.number)) is not None
            ]
            beside = [
                negative_extend(memory, negative, sequence.token_ids)
                for sequence, negative in partners
            ]
            needed = {sequence.seq_id: len(sequence.pending) for sequence in stepping}
            needed.update((extend.seq_id, len(extend.tokens)) for extend in beside)
            if not memory.fits(needed):
                for sequence in stepping:
                    yield (
                        sequence.number,
                        NoticeEvent(
                            f"the context of {model.n_ctx} tokens is full: reply cut short"
                        ),
                    )
                    sequence.reason = "context_full"
                    yield from self._finish(sequence, None)
                return
            plan = [Extend(sequence.seq_id, tuple(sequence.pending)) for sequence in stepping]
            self._logits = yield Plan([*plan, *beside])
            for row, sequence in enumerate(stepping):
                sequence.row = row
                sequence.pending = []
            for row, (_, negative) in enumerate(partners, start=len(stepping)):
                negative.logits = self._logits[row]
            if self.twins is not None:
                self.twins.step({sequence.seq_id: sequence.token_ids for sequence in stepping})

    def _sample(self, sequence: LoopSequence) -> Iterator[Event]:
        session = self.session
        model, memory = session.model, session.memory
        assert sequence.row is not None
        row = sequence.row
        logits = self._logits[row] if row >= 0 else model.logits(-1)
        index = sequence.index
        force = self.steer.forced_at(index)
        negative = self.negatives.get(sequence.number)
        yield from self._missing(sequence, negative is None)
        second = None if negative is None else negative.logits
        small = None if self.twins is None else self.twins.logits[sequence.seq_id]
        try:
            step = sequence.sample(logits, memory.tokens(sequence.seq_id), force, second, small)
        except GrammarDeadEnd as dead_end:  # the reply ends; the chat is kept
            yield sequence.number, NoticeEvent(str(dead_end))
            sequence.reason, sequence.row, sequence.pending = "grammar", None, []
            yield from self._finish(sequence, None)
            return
        for note in step.notes:  # a sampler plugin switched off: told where it happened
            yield sequence.number, NoticeEvent(note)
        token = step.token_id
        if sequence.first_token_at is None:
            sequence.first_token_at = session.clock()
        eog = model.is_eog(token)
        text = "" if eog else sequence.stream.feed(model.token_bytes(token))
        sequence.give(token, text)
        sequence.row = None
        sequence.pending = [token]
        yield (
            sequence.number,
            TokenEvent(index=index, step=step, text=text, piece=model.shown_piece(token)),
        )
        if sequence.row is not None or sequence.pending != [token] or sequence.index != index + 1:
            return  # rewound while the event was out
        if eog:
            sequence.reason = "eos"
        elif sequence.ending is not None:
            sequence.reason = sequence.ending
        elif index + 1 >= self.max_tokens:
            sequence.reason = "max_tokens"
        else:
            return
        sequence.pending = []
        yield from self._finish(sequence, None)

    def _missing(self, sequence: LoopSequence, alone: bool) -> Iterator[Event]:
        """Tell a sequence once that its settings ask for a distribution it has not
        beside it: guidance switched on mid-reply (`alone`: no negative prompt), or
        contrast without a smaller model."""
        settings = sequence.live.current
        for key, missing, message in (
            (sequence.number, alone and Guidance.is_on(settings), GUIDANCE_LATE),
            (-1 - sequence.number, self.twins is None and Contrast.is_on(settings), NO_TWINS),
        ):
            if missing and key not in self._told:
                self._told.add(key)
                yield sequence.number, NoticeEvent(message)

    # ---- the end ------------------------------------------------------------------

    def _end_all(self, reason: FinishReason) -> None:
        for sequence in self.sequences:
            if sequence.reason is None:
                sequence.reason = reason

    def _finish(self, sequence: LoopSequence, error: str | None) -> Iterator[Event]:
        """The sequence's last events (once): its phase "done" and its FinishedEvent."""
        if sequence.row == -2:
            return
        sequence.row = -2  # reported
        memory = self.session.memory
        # What the memory holds now is what a later reply starts from: replay needs it.
        cached = len(memory.tokens(sequence.seq_id)) if not memory.model.lost else 0
        decoding = None
        if len(self.sequences) > 1:
            layout = self.layout
            decoding = Decoding(sequence.number, self.start_settings, layout.streams, layout.repack)
        yield sequence.number, PhaseEvent("done")
        error = sequence.error if error is None else error
        yield sequence.number, sequence.finished(self.session.clock(), cached, error, decoding)
