"""The events a generation yields, consumed alike by the TUI and the command line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from sampling.analysis.loops import Loop
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.records import Step
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry

Phase = Literal["prefill", "decode", "done"]
FinishReason = Literal[
    "eos", "max_tokens", "context_full", "cancelled", "error", "banned", "grammar", "loop"
]
"""Why a generation ended; "banned": phrase bans left no token to take at a position
(the reply stops there, before the phrase); "grammar": the grammar left no legal token;
"loop": the reply ran into a repetition loop and was stopped on it
(`backend.session.loop_watch`)."""


@dataclass(frozen=True, slots=True)
class PhaseEvent:
    """The generation entered a phase."""

    phase: Phase


@dataclass(frozen=True, slots=True)
class PrefillProgress:
    """A prefill chunk finished: `done` of `total` prompt tokens are in the cache."""

    done: int
    total: int


@dataclass(frozen=True, slots=True)
class TokenEvent:
    """One sampled token.

    Attributes:
        index: 0-based position of the token in this reply.
        step: The sampler's record for it.
        text: The text it completes (may be "" while a multi-byte character is split
            across tokens; the bytes come out whole with a later token).
        piece: The token's own bytes shown visibly (for the probability panel).
    """

    index: int
    step: Step
    text: str
    piece: str


@dataclass(frozen=True, slots=True)
class RewindEvent:
    """The reply went back: its tokens from `index` on were discarded and it goes on
    from there (a phrase ban's backtracking; the next TokenEvent has `index` again).

    Attributes:
        index: The first discarded token's index.
        token_ids: The discarded tokens, in order (the rejected attempt).
        text: The text they made.
        matched: The banned text found in the reply, which began in token `index`.
        banned: Every token now banned at `index` (the first discarded one among them).
    """

    index: int
    token_ids: tuple[int, ...]
    text: str
    matched: str
    banned: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LoopEvent:
    """The reply's loop changed: one formed, grew by a copy, or (after a rewind) is
    another or gone (`backend.session.loop_watch`).

    Attributes:
        loop: The latest loop found in the reply so far (None: none).
    """

    loop: Loop | None


@dataclass(frozen=True, slots=True)
class NoticeEvent:
    """Something the user should be told (e.g. old turns dropped to fit the context)."""

    message: str


@dataclass(frozen=True, slots=True)
class GenerationStats:
    """Figures of one finished generation.

    Attributes:
        prompt_tokens: Tokens of the whole rendered prompt.
        prefilled_tokens: Of those, how many were computed (the rest came from cache).
        prefill_ms: Wall time of the prefill.
        ttft_ms: Time from start to the first sampled token.
        decode_tokens: Tokens sampled.
        decode_ms: Wall time of the decode phase.
        decode_tps: Sampled tokens per second during decode.
        sampler_us: Total microseconds spent in the sampler.
        cached_tokens: Tokens the KV cache held when the generation ended, prompt
            included (None when unknown). A reply that ended in an error may have left
            its last sampled token in the cache or not; a replay of a later reply
            rebuilds the cache from this.
        discarded_tokens: Tokens decoded that are not in the reply: dropped by a rewind
            (a phrase ban's backtracking), or a beam search's other beams; not counted
            in `decode_tokens`.
    """

    prompt_tokens: int = 0
    prefilled_tokens: int = 0
    prefill_ms: float = 0.0
    ttft_ms: float = 0.0
    decode_tokens: int = 0
    decode_ms: float = 0.0
    decode_tps: float = 0.0
    sampler_us: float = 0.0
    cached_tokens: int | None = None
    discarded_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Decoding:
    """How a reply was decoded when not alone: in lockstep with siblings, one batch
    holding a token of every live sequence a step.

    With one KV stream per sequence and weights not repacked, llama.cpp gives a
    sequence beside others exactly its logits alone (on its CPU backend; the model's
    load checks it). Otherwise a token's logits depend on the batch, so a replay
    rebuilds such a reply by running every sibling again in lockstep, each with its
    settings, in the layout recorded here.

    Attributes:
        number: The reply's sequence among its siblings (its place, from 0).
        settings: Every sequence's settings at the start, in order (its own included).
        streams: Each sequence had its own KV stream (else one unified stream: every
            record stored before streams, which says nothing of them).
        repack: The weights were repacked (records before streams: they were).
    """

    number: int
    settings: tuple[SamplerSettings, ...]
    streams: bool = True
    repack: bool = False

    def to_json(self) -> str:
        """The record as stored (`replies.decoding`)."""
        return json.dumps(
            {
                "lockstep": self.number,
                "columns": [s.to_dict() for s in self.settings],
                "kv": "streams" if self.streams else "unified",
                "repack": self.repack,
            }
        )

    @classmethod
    def from_json(cls, text: str, registry: Registry = BUILT_IN_REGISTRY) -> Decoding:
        """The record from its stored text (one stored without `kv`: unified and
        repacked, as lockstep replies were decoded then), its columns' settings made
        with `registry` (the store's).

        Raises:
            ValueError: The text is not such a record.
        """
        try:
            values = json.loads(text)
            settings = tuple(SamplerSettings.from_dict(v, registry) for v in values["columns"])
            number = int(values["lockstep"])
            kv = values.get("kv", "unified")
            repack = bool(values.get("repack", "kv" not in values))
        except (TypeError, KeyError, AttributeError, json.JSONDecodeError) as error:
            raise ValueError(f"not a decoding record: {text[:60]!r} ({error})") from None
        if not 0 <= number < len(settings):
            raise ValueError(f"decoding record: sequence {number} of {len(settings)}")
        if kv not in ("streams", "unified"):
            raise ValueError(f"decoding record: unknown kv {kv!r}")
        return cls(number, settings, kv == "streams", repack)


@dataclass(frozen=True, slots=True)
class FinishedEvent:
    """The generation ended.

    Attributes:
        reason: Why it ended.
        stats: Its figures.
        text: The whole reply text.
        token_ids: The sampled token ids, in order.
        error: The user-facing error message when `reason` is "error".
        decoding: How it was decoded when in lockstep with siblings (None: alone).
        loop: The latest repetition loop found in the reply while it was watched for
            (None: none found, or not watched).
    """

    reason: FinishReason
    stats: GenerationStats
    text: str
    token_ids: tuple[int, ...]
    error: str | None = None
    decoding: Decoding | None = None
    loop: Loop | None = None


GenerationEvent = (
    PhaseEvent
    | PrefillProgress
    | TokenEvent
    | RewindEvent
    | LoopEvent
    | NoticeEvent
    | FinishedEvent
)
