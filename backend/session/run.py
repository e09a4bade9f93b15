"""One sequence of a generation: its sampler, its tokens and text, its figures, rewind.

A `LoopSequence` is what the loop (`backend.session.loop`) keeps for each sequence it runs:
the sampler with its live settings, the tokens and the text they make, the sampler's
state before each sampled token (to rewind to), and the figures its FinishedEvent
reports.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from backend.chat.events import Decoding, FinishedEvent, FinishReason, GenerationStats
from backend.chat.protocol import LiveSettings
from backend.llama.utf8 import Utf8Stream
from sampling.errors import SamplescopeError
from sampling.logits import History
from sampling.records import Step
from sampling.sampler import Sampler, SamplerState, probabilities
from sampling.samplers.logit_bias import LogitBiasParams
from sampling.settings.record import SamplerSettings
from sampling.vocabulary import Vocabulary


@dataclass(frozen=True, slots=True)
class Steer:
    """How a generation is steered: the reply's given start and a forced next token.

    Attributes:
        prefix: Tokens the reply starts with (a parent branch's tokens before a fork).
        force: The token to take at index `len(prefix)` instead of the drawn one.
        then: Tokens to take after `force`, one a step, instead of the drawn ones (a
            path chosen in an explore tree).
    """

    prefix: tuple[int, ...] = ()
    force: int | None = None
    then: tuple[int, ...] = ()

    def forced_at(self, index: int) -> int | None:
        """The token to take at reply index `index` instead of the drawn one (None: the
        drawn one)."""
        at = index - len(self.prefix)
        if at == 0:
            return self.force
        if 0 < at <= len(self.then) and self.force is not None:
            return self.then[at - 1]
        return None


@dataclass(frozen=True, slots=True)
class StepInput:
    """What the sampler saw at one step: the logits and the token history.

    Attributes:
        logits: A copy of the step's logits (float32, the vocabulary's length).
        history: The tokens before the step, prompt included (what penalties see).
        second: A copy of the negative prompt's logits at the step (guidance), or None.
        small: A copy of the contrast model's logits at the step, or None.
    """

    logits: np.ndarray
    history: tuple[int, ...]
    second: np.ndarray | None = None
    small: np.ndarray | None = None


def with_banned(settings: SamplerSettings, tokens: frozenset[int]) -> SamplerSettings:
    """`settings` with `tokens` banned (a -inf logit bias; other biases kept)."""
    bias = dict(settings.of(LogitBiasParams).logit_bias)
    bias.update((token, -math.inf) for token in tokens)
    return settings.with_changes(logit_bias=tuple(sorted(bias.items())))


def forced_step(
    step: Step,
    token: int,
    logits: object,
    history: History,
    vocabulary: Vocabulary | None = None,
    generated: int = 0,
    second: np.ndarray | None = None,
    small: np.ndarray | None = None,
    sampler: Sampler | None = None,
) -> Step:
    """`step` with `token` taken instead of the drawn one, at its probability there
    (a grammar's matcher comes from `vocabulary`, after the reply's `generated` tokens;
    guidance combines `logits` with `second`, contrast with `small`); its logit and rank
    are its table row's (None when it is below the table). `sampler`, the one that
    sampled the step, gives the token's section and the answer's start."""
    probs = probabilities(
        logits,
        step.settings,
        history,
        vocabulary=vocabulary,
        generated=generated,
        second=second,
        small=small,
        thinking=step.thinking_open,
        answer_start=None if sampler is None else sampler.answer_start,
    )
    rows = np.flatnonzero(step.table.token_ids == token)
    logit = float(step.table.logits[rows[0]]) if rows.size else None
    rank = int(rows[0]) + 1 if rows.size else None
    section = step.section if sampler is None else sampler.section_of(token)
    return replace(
        step,
        token_id=token,
        prob=float(probs[token]),
        draw=None,
        logit=logit,
        rank=rank,
        section=section,
    )


class RewindError(SamplescopeError):
    """A sequence cannot be rewound that far (the message says why)."""


@dataclass(slots=True)
class LoopSequence:
    """One sequence of a generation and what it has produced so far.

    Attributes:
        number: Which of the generation's sequences it is (its events' tag).
        seq_id: The model's sequence id it decodes into (its KV stream).
        live: Its settings, read before every token.
        sampler: Its sampler (its own random stream).
        started: When the generation started (the clock's reading).
        given: How many tokens at the start were given (a steer's prefix).
        rewindable: Keep the sampler's state before every token (what rewind needs).
    """

    number: int
    seq_id: int
    live: LiveSettings
    sampler: Sampler
    started: float
    given: int = 0
    rewindable: bool = False
    """Whether its sampler's state is kept before every token (what rewind needs)."""
    prompt_tokens: int = 0
    prefilled: int = 0
    prefill_ms: float = 0.0
    first_token_at: float | None = None
    decode_started: float | None = None
    sampler_us: float = 0.0
    token_ids: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    """The text each token completed (aligned with `token_ids`)."""
    states: list[SamplerState] = field(default_factory=list)
    """The sampler's state before each sampled token (index - given)."""
    stream: Utf8Stream = field(default_factory=Utf8Stream)
    reason: FinishReason | None = None
    """Why it ended (None while it runs)."""
    error: str | None = None
    """The error it ended on, when ended from outside (`Generation.end`)."""
    ending: FinishReason | None = None
    """Why it ends after its latest token unless that token is rewound first
    (`Generation.end_after`; None: it goes on)."""
    row: int | None = -1
    """Where its next logits are: its place among the last step's sequences (-1: the
    prompt's end; None: to be decoded; -2: it has ended and was reported)."""
    pending: list[int] = field(default_factory=list)
    """Tokens to decode into its sequence with the next step."""
    bans: dict[int, frozenset[int]] = field(default_factory=dict)
    """Tokens banned at an index (a phrase ban's backtracking): the sampler sees them
    at -inf there, through its settings' logit bias, so the step records the ban."""
    discarded: int = 0
    """How many sampled tokens rewinds dropped (decoded, then discarded)."""

    @property
    def index(self) -> int:
        """The index the next sampled token gets."""
        return len(self.token_ids)

    def give(self, token: int, text: str) -> None:
        """Append a given or sampled token and the text it completed."""
        self.token_ids.append(token)
        self.texts.append(text)

    def ban(self, index: int, token: int) -> frozenset[int]:
        """Ban `token` at `index` from now on (on top of those banned there already);
        the bans past `index` go, as the text they guarded is gone.

        Returns:
            Every token banned at `index`.
        """
        for later in [i for i in self.bans if i > index]:
            del self.bans[later]
        banned = self.bans.get(index, frozenset()) | {token}
        self.bans[index] = banned
        return banned

    def sample(
        self,
        logits: object,
        history: Sequence[int],
        force: int | None,
        second: np.ndarray | None = None,
        small: np.ndarray | None = None,
    ) -> Step:
        """Sample the next token (settings read now; `force` taken instead if given;
        `second`: the negative prompt's logits, for guidance; `small`: the contrast
        model's)."""
        current = self.live.current
        banned = self.bans.get(self.index)
        if banned:
            current = with_banned(current, banned)
        sampler = self.sampler
        if current is not sampler.settings:
            sampler.settings = current
        sampler.tail_ranks = self.live.tail_ranks
        if self.rewindable:
            self.states.append(sampler.state())
        step = sampler.sample(logits, history, second=second, small=small)
        sink = self.live.step_sink
        if sink is not None:
            if small is not None:
                sink(self.index, logits, history, second, small)
            elif second is not None:
                sink(self.index, logits, history, second)
            else:
                sink(self.index, logits, history)
        if force is not None:
            step = forced_step(
                step, force, logits, history, sampler.vocabulary, self.index, second, small, sampler
            )
        self.sampler_us += step.elapsed_us
        return step

    def rewind(self, count: int, token_bytes: Callable[[int], bytes]) -> int:
        """Drop the last `count` sampled tokens: the sampler goes back to its state
        before the first of them, the text is cut.

        Returns:
            How many tokens the sequence holds now.

        Raises:
            RewindError: Fewer than `count` tokens were sampled, or the sequence ended.
        """
        sampled = len(self.states)
        if not self.rewindable:
            raise RewindError("this generation keeps no sampler states: start it rewindable")
        if self.reason is not None:
            raise RewindError(f"sequence {self.number} has ended ({self.reason})")
        if not 1 <= count <= sampled:
            raise RewindError(
                f"cannot rewind {count} tokens: sequence {self.number} sampled {sampled}"
            )
        keep = self.index - count
        self.discarded += count
        self.ending = None  # the token it was to end after is gone
        self.sampler.restore(self.states[keep - self.given])
        del self.states[keep - self.given :]
        del self.token_ids[keep:], self.texts[keep:]
        self.stream = Utf8Stream()
        for token in self.token_ids:
            self.stream.feed(token_bytes(token))
        return keep

    def stats(self, now: float, cached_tokens: int | None) -> GenerationStats:
        """Its figures at `now`."""
        decode_ms = 0.0 if self.decode_started is None else (now - self.decode_started) * 1000
        n = len(self.token_ids) - self.given  # the tokens it sampled, not those given
        ttft = None if self.first_token_at is None else self.first_token_at - self.started
        return GenerationStats(
            prompt_tokens=self.prompt_tokens,
            prefilled_tokens=self.prefilled,
            prefill_ms=self.prefill_ms,
            ttft_ms=0.0 if ttft is None else ttft * 1000,
            decode_tokens=n,
            decode_ms=decode_ms,
            decode_tps=n / (decode_ms / 1000) if decode_ms > 0 else 0.0,
            sampler_us=self.sampler_us,
            cached_tokens=cached_tokens,
            discarded_tokens=self.discarded,
        )

    def finished(
        self,
        now: float,
        cached_tokens: int | None,
        error: str | None = None,
        decoding: Decoding | None = None,
    ) -> FinishedEvent:
        """Its FinishedEvent (`reason` must be set)."""
        assert self.reason is not None
        # A character cut off by max_tokens or a cancel is dropped (it is unfinished,
        # not wrong); one left dangling when the model itself stopped shows as U+FFFD.
        tail = self.stream.flush() if self.reason == "eos" else ""
        return FinishedEvent(
            reason=self.reason,
            stats=self.stats(now, cached_tokens),
            text="".join(self.texts) + tail,
            token_ids=tuple(self.token_ids),
            error=error,
            decoding=decoding,
        )


def clock_now() -> float:
    """The default clock of a generation's figures."""
    return time.perf_counter()
