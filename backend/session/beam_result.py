"""What a beam search finds: its hypotheses, why each ended, how a stored reply says it
was one, and each token's text.

A `Beam` is one hypothesis (its tokens, their step records, its log-probability and the
score that ranks it); a `BeamSearch` the kept ones, best first, and those pruned on the
way. A beam saved as a reply carries a `decoding` record (`beam_decoding`) that replay
reads back (`beam_record`). The search itself is `backend.session.beams`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from backend.chat.events import FinishReason, GenerationStats
from backend.llama.utf8 import Utf8Stream
from backend.session.model import Model
from sampling.errors import SamplescopeError
from sampling.records import Step

SearchEnd = Literal["eos", "max_tokens", "context_full", "cancelled", "banned"]
"""Why a search stopped; "eos": every kept hypothesis ended with an end token;
"banned": every continuation of every beam held a banned phrase."""
BeamEnd = SearchEnd | Literal["pruned", "live"]
"""How a hypothesis ended: as the search did, or "pruned" ("live" while it runs)."""
_FINISH: dict[BeamEnd, FinishReason] = {
    "eos": "eos",
    "max_tokens": "max_tokens",
    "context_full": "context_full",
    "cancelled": "cancelled",
    "banned": "banned",
}


def beam_decoding(width: int, length_penalty: float, rank: int) -> str:
    """How a beam was found, as a stored reply's `decoding` record (JSON)."""
    return json.dumps({"beams": width, "length_penalty": length_penalty, "rank": rank})


def beam_record(decoding: str | None) -> dict[str, object] | None:
    """A stored `decoding` record of a beam (`beam_decoding`), or None when it is not one."""
    if decoding is None:
        return None
    try:
        values = json.loads(decoding)
    except json.JSONDecodeError:
        return None
    return values if isinstance(values, dict) and "beams" in values else None


class BeamSearchError(SamplescopeError):
    """A beam search cannot run as asked (the message says why)."""


@dataclass(frozen=True, slots=True)
class Beam:
    """One hypothesis of a beam search.

    Attributes:
        token_ids: Its tokens (an end-of-generation token last when it finished so).
        steps: Each token's step record: the candidate table of its beam's logits,
            `prob` the token's probability under the chain (no draw).
        logprob: The sum of the logs of its steps' probabilities.
        score: `logprob / len(token_ids) ** length_penalty` (what ranks it).
        reason: "eos" (it ended with an end-of-generation token), "max_tokens", or
            "pruned" (better beams took its place).
        pruned_at: The step it was dropped at (its length then), None when kept.
    """

    token_ids: tuple[int, ...]
    steps: tuple[Step, ...] = field(repr=False)
    logprob: float
    score: float
    reason: BeamEnd
    pruned_at: int | None = None

    @property
    def finish_reason(self) -> FinishReason:
        """A kept hypothesis's finish reason, as a reply's.

        Raises:
            BeamSearchError: It was pruned (or is live).
        """
        reason = _FINISH.get(self.reason)
        if reason is None:
            raise BeamSearchError(f"a {self.reason} hypothesis has no finish reason")
        return reason


@dataclass(frozen=True, slots=True)
class BeamSearch:
    """What a beam search found.

    Attributes:
        beams: The W best hypotheses, best first.
        pruned: Every hypothesis dropped on the way (each with `pruned_at`).
        stats: The best beam's figures; `decode_tokens` counts its tokens and
            `discarded_tokens` every other token the search decoded.
        steps: How many lockstep steps (decode batches) ran.
        notices: What the prompt's fitting said.
        reason: Why it stopped: "eos" (every kept hypothesis finished), "max_tokens",
            "context_full" or "cancelled".
        banned: How many continuations were passed over for completing a banned phrase.
        length_penalty: The exponent of the length that divided the finished ones'
            log-probabilities.
    """

    beams: tuple[Beam, ...]
    pruned: tuple[Beam, ...]
    stats: GenerationStats
    steps: int
    notices: tuple[str, ...]
    reason: SearchEnd
    banned: int = 0
    length_penalty: float = 0.0


def token_texts(model: Model, token_ids: Sequence[int]) -> list[str]:
    """The text each token completes (a split character comes out whole, with the
    token that ends it; an end-of-generation token adds none)."""
    stream = Utf8Stream()
    texts = ["" if model.is_eog(t) else stream.feed(model.token_bytes(t)) for t in token_ids]
    if texts:
        texts[-1] += stream.flush()
    return texts
