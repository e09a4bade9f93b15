"""What one generation has produced so far, and the cache-alignment helper.

Split from `backend.chat.llama_backend` so that module keeps to the generation loop.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from backend.chat.events import FinishedEvent, FinishReason, GenerationStats
from backend.llama.utf8 import Utf8Stream
from sampling.penalties import History
from sampling.records import Step
from sampling.sampler import probabilities

#: A context shift must save at least this many tokens of prefill (or reach the cache's end).
MIN_SHIFT_MATCH = 16
#: How many alignments of the cache against the prompt a context shift tries.
MAX_SHIFT_CANDIDATES = 256


@dataclass(frozen=True, slots=True)
class Steer:
    """How a generation is steered: the reply's given start and a forced next token.

    Attributes:
        prefix: Tokens the reply starts with (a parent branch's tokens before a fork).
        force: The token to take at index `len(prefix)` instead of the drawn one.
    """

    prefix: tuple[int, ...] = ()
    force: int | None = None


@dataclass(frozen=True, slots=True)
class StepInput:
    """What the sampler saw at one step: the logits and the token history.

    Attributes:
        logits: A copy of the step's logits (float32, the vocabulary's length).
        history: The tokens before the step, prompt included (what penalties see).
    """

    logits: np.ndarray
    history: tuple[int, ...]


def forced_step(step: Step, token: int, logits: object, history: History) -> Step:
    """`step` with `token` taken instead of the drawn one, at its probability there."""
    probs = probabilities(logits, step.settings, history)
    return replace(step, token_id=token, prob=float(probs[token]), draw=None)


@dataclass(slots=True)
class RunState:
    """What one generation has produced so far (also reported when it fails)."""

    started: float
    prompt_tokens: int = 0
    prefilled: int = 0
    prefill_ms: float = 0.0
    first_token_at: float | None = None
    decode_started: float | None = None
    sampler_us: float = 0.0
    token_ids: list[int] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    cached_tokens: int | None = None
    given: int = 0
    """Of `token_ids`, how many lead in given (a branch's parent tokens), not sampled."""

    def stats(self) -> GenerationStats:
        now = time.perf_counter()
        decode_ms = 0.0 if self.decode_started is None else (now - self.decode_started) * 1000
        n = len(self.token_ids) - self.given
        return GenerationStats(
            prompt_tokens=self.prompt_tokens,
            prefilled_tokens=self.prefilled,
            prefill_ms=self.prefill_ms,
            ttft_ms=0.0
            if self.first_token_at is None
            else (self.first_token_at - self.started) * 1000,
            decode_tokens=n,
            decode_ms=decode_ms,
            decode_tps=n / (decode_ms / 1000) if decode_ms > 0 else 0.0,
            sampler_us=self.sampler_us,
            cached_tokens=self.cached_tokens,
        )

    def finished(self, reason: FinishReason, error: str | None = None) -> FinishedEvent:
        return FinishedEvent(
            reason=reason,
            stats=self.stats(),
            text="".join(self.text),
            token_ids=tuple(self.token_ids),
            error=error,
        )


def flush(run: RunState, stream: Utf8Stream, reason: FinishReason) -> FinishReason:
    # A character cut off by max_tokens or a cancel is dropped (it is unfinished, not
    # wrong); one left dangling when the model itself stopped is shown as U+FFFD.
    tail = stream.flush() if reason == "eos" else ""
    if tail:
        run.text.append(tail)
    return reason


def dropped_span(cache: Sequence[int], prompt: Sequence[int], start: int) -> int:
    """Length of a span after `start` whose removal lines the cache up with the prompt.

    Returns 0 when no removal gives a match of at least `MIN_SHIFT_MATCH` tokens (or
    one reaching the end of the cache).
    """
    cached = np.asarray(cache[start:], dtype=np.int64)
    wanted = np.asarray(prompt[start:], dtype=np.int64)
    if cached.size < 2 or wanted.size == 0:
        return 0
    best_gap, best_match = 0, 0
    for gap in (np.flatnonzero(cached[1:] == wanted[0]) + 1)[:MAX_SHIFT_CANDIDATES]:
        n = min(cached.size - int(gap), wanted.size)
        equal = cached[gap : gap + n] == wanted[:n]
        match = n if bool(equal.all()) else int(np.argmin(equal))
        if match > best_match:
            best_gap, best_match = int(gap), match
    if best_match >= min(MIN_SHIFT_MATCH, cached.size - best_gap):
        return best_gap
    return 0
