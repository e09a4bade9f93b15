"""A deterministic fake model implementing ChatBackend, for UI tests and snapshots.

The fake has a small vocabulary of words. Its logits are derived from a hash of the
last few token ids, so the same context always gives the same distribution, and the
distribution is spread enough that top-k / top-p / min-p cutoffs show on screen. The
token is chosen by the real `sampling.Sampler`, so every `Step` is a real record.

Hooks for tests: a per-token and per-prefill-chunk delay, and a pause after a given
number of tokens or prefill chunks (the generator blocks until `resume` is set or
the generation is cancelled), so a snapshot can catch the app mid-reply.
"""

from __future__ import annotations

import hashlib
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import numpy as np

from backend.chat.compare import common_prefix
from backend.chat.events import (
    FinishedEvent,
    FinishReason,
    GenerationEvent,
    GenerationStats,
    PhaseEvent,
    PrefillProgress,
    TokenEvent,
)
from backend.chat.protocol import ChatMessage, LiveSettings, ModelInfo
from backend.chat.run_state import Steer, forced_step
from backend.llama.pieces import visible_piece
from sampling import Sampler

EOS_ID = 0

FAKE_VOCAB: tuple[str, ...] = (
    "</s>",
    " the",
    " a",
    " cat",
    " dog",
    " sat",
    " on",
    " mat",
    " and",
    " then",
    " it",
    " was",
    " very",
    " happy",
    " sad",
    " small",
    " big",
    " red",
    " blue",
    " tree",
    " house",
    " river",
    " ran",
    " jumped",
    " slept",
    " saw",
    " bird",
    " sky",
    " in",
    " of",
    " to",
    " with",
    ".",
    ",",
    "!",
    "?",
    "\n",
    " I",
    " you",
    " we",
    " they",
    " like",
    " think",
    " maybe",
    " not",
    " all",
    " some",
    " [bold]",
    " tokens",
    " probability",
    " sample",
    " model",
    " next",
    " word",
    " chosen",
    " cut",
    " kept",
    " 42",
    " é",
    " 猫",
    " 🙂",
    "  ",
    " ok",
    " yes",
)
"""The fake vocabulary: id = index. Id 0 ends a reply; " [bold]" tests that markup
stays literal."""

_CONTEXT_WINDOW = 3
_NEWLINE_ID = 36


class FakeBackend:
    """A deterministic word-level model implementing `ChatBackend`.

    Args:
        token_delay: Seconds to sleep before each sampled token.
        prefill_chunk: Prompt tokens per prefill chunk (like `n_batch`).
        prefill_delay: Seconds to sleep per prefill chunk.
        pause_after_tokens: Block after yielding this many tokens of a reply.
        pause_after_chunks: Block after yielding this many prefill progress events.
        clock: Time source for the stats (inject a fake one for fixed figures).
        n_ctx: The context size reported by `info`.
        min_reply_tokens: End-of-reply is impossible before this many tokens.
        flat_at: The reply token (0-based) whose logits are all equal: a known
            entropy spike and unlikely pick (the plots' tests).
    """

    def __init__(
        self,
        *,
        token_delay: float = 0.0,
        prefill_chunk: int = 8,
        prefill_delay: float = 0.0,
        pause_after_tokens: int | None = None,
        pause_after_chunks: int | None = None,
        clock: Callable[[], float] = time.perf_counter,
        n_ctx: int = 2048,
        min_reply_tokens: int = 12,
        flat_at: int | None = None,
    ) -> None:
        if prefill_chunk < 1:
            raise ValueError(f"prefill_chunk must be >= 1, got {prefill_chunk}")
        self.token_delay = token_delay
        self.prefill_chunk = prefill_chunk
        self.prefill_delay = prefill_delay
        self.pause_after_tokens = pause_after_tokens
        self.pause_after_chunks = pause_after_chunks
        self.clock = clock
        self.min_reply_tokens = min_reply_tokens
        self.flat_at = flat_at
        self.paused = threading.Event()
        """Set while the generator is blocked at a pause point."""
        self.resume = threading.Event()
        """Set it to let a paused generator go on."""
        self._info = ModelInfo(
            name="fake-words",
            path="<fake>",
            n_ctx=n_ctx,
            n_threads=1,
            n_vocab=len(FAKE_VOCAB),
            n_batch=prefill_chunk,
        )
        self._cache: list[int] = []

    @property
    def info(self) -> ModelInfo:
        """The fake model's description."""
        return self._info

    @property
    def context_used(self) -> int:
        """Tokens held in the fake KV cache."""
        return len(self._cache)

    def token_piece(self, token_id: int) -> str:
        """The visible form of a token (for the probability panel)."""
        if 0 <= token_id < len(FAKE_VOCAB):
            return visible_piece(FAKE_VOCAB[token_id])
        return f"#{token_id}"

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of a token (a saved reply's text, token by token)."""
        return FAKE_VOCAB[token_id].encode() if 0 < token_id < len(FAKE_VOCAB) else b""

    def encode_text(self, text: str) -> list[int]:
        """The ids of a text made of vocabulary entries, longest entry first (no match: [])."""
        ids: list[int] = []
        rest = text
        while rest:
            match = max(
                (i for i, entry in enumerate(FAKE_VOCAB) if i and rest.startswith(entry)),
                key=lambda i: len(FAKE_VOCAB[i]),
                default=None,
            )
            if match is None:
                return []
            ids.append(match)
            rest = rest[len(FAKE_VOCAB[match]) :]
        return ids

    def tokenize(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The fake prompt tokens of a conversation plus the assistant prefix."""
        ids: list[int] = []
        for message in messages:
            ids.extend((_NEWLINE_ID, _role_id(message.role), _NEWLINE_ID))
            ids.extend(_word_id(word) for word in message.content.split())
        ids.extend((_NEWLINE_ID, _role_id("assistant"), _NEWLINE_ID))
        return ids

    def logits(self, context: Sequence[int]) -> np.ndarray:
        """The fake logits after `context`: a function of its last few ids only."""
        key = ",".join(str(i) for i in context[-_CONTEXT_WINDOW:]).encode()
        seed = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")
        rng = np.random.default_rng(seed)
        values = rng.standard_normal(len(FAKE_VOCAB)) * 2.0
        # A few strong favourites make the distribution peaked, like a real model's.
        favourites = rng.choice(np.arange(1, len(FAKE_VOCAB)), size=3, replace=False)
        values[favourites] += np.array([3.0, 2.2, 1.5])
        values[EOS_ID] = -4.0
        return values.astype(np.float32)

    def generate(
        self,
        messages: Sequence[ChatMessage],
        settings: LiveSettings,
        *,
        max_tokens: int = 512,
        cancel: threading.Event | None = None,
        raw: bool = False,
        steer: Steer | None = None,
    ) -> Iterator[GenerationEvent]:
        """Generate a reply; see `ChatBackend.generate` (`steer`: `LlamaBackend`'s)."""
        start = self.clock()
        prompt = self.tokenize(messages[-1:] if raw else messages)
        shared = common_prefix(self._cache, prompt)
        self._cache = self._cache[:shared]
        todo = len(prompt) - shared
        stats = GenerationStats(prompt_tokens=len(prompt), prefilled_tokens=todo)
        yield PhaseEvent("prefill")
        chunks = 0
        done = 0
        while done < todo:
            if _is_set(cancel):
                yield from self._finish("cancelled", stats, start, (), "", 0.0)
                return
            self._sleep(self.prefill_delay, cancel)
            done = min(todo, done + self.prefill_chunk)
            self._cache = prompt[: shared + done]
            chunks += 1
            yield PrefillProgress(done=done, total=todo)
            if self.pause_after_chunks is not None and chunks == self.pause_after_chunks:
                self._pause(cancel)
        self._cache = list(prompt)
        prefill_end = self.clock()
        stats = replace(stats, prefill_ms=(prefill_end - start) * 1000.0)
        yield PhaseEvent("decode")
        sampler = Sampler(settings.current, vocab_size=len(FAKE_VOCAB))
        steer = steer or Steer()
        reply: list[int] = list(steer.prefix)
        self._cache.extend(steer.prefix)
        text_parts: list[str] = [FAKE_VOCAB[token] for token in steer.prefix]
        sampler_us = 0.0
        first_token_at: float | None = None
        reason: FinishReason = "max_tokens"
        while len(reply) < max_tokens:
            if _is_set(cancel):
                reason = "cancelled"
                break
            self._sleep(self.token_delay, cancel)
            sampler.settings = settings.current
            sampler.tail_ranks = settings.tail_ranks
            logits = self.logits(self._cache)
            if len(reply) == self.flat_at:
                logits[:] = 0.0
            if len(reply) < self.min_reply_tokens:
                logits[EOS_ID] = -1e4
            else:
                logits[EOS_ID] = -4.0 + 0.25 * (len(reply) - self.min_reply_tokens)
            step = sampler.sample(logits, history=self._cache)
            if len(reply) == len(steer.prefix) and steer.force is not None:
                step = forced_step(step, steer.force, logits, self._cache)
            if settings.step_sink is not None:
                settings.step_sink(len(reply), logits, self._cache)
            sampler_us += step.elapsed_us
            if first_token_at is None:
                first_token_at = self.clock()
            if step.token_id == EOS_ID:
                reason = "eos"
                break
            reply.append(step.token_id)
            self._cache.append(step.token_id)
            text = FAKE_VOCAB[step.token_id]
            text_parts.append(text)
            yield TokenEvent(len(reply) - 1, step, text, visible_piece(text))
            if self.pause_after_tokens is not None and len(reply) == self.pause_after_tokens:
                self._pause(cancel)
        end = self.clock()
        decode_ms = (end - prefill_end) * 1000.0
        stats = replace(
            stats,
            ttft_ms=((first_token_at or end) - start) * 1000.0,
            decode_tokens=len(reply) - len(steer.prefix),
            decode_ms=decode_ms,
            decode_tps=(len(reply) - len(steer.prefix)) / (decode_ms / 1000.0)
            if decode_ms > 0
            else 0.0,
        )
        yield from self._finish(reason, stats, start, tuple(reply), "".join(text_parts), sampler_us)

    def reset(self) -> None:
        """Forget the fake KV cache."""
        self._cache = []

    def close(self) -> None:
        """Nothing to free."""

    def _finish(
        self,
        reason: FinishReason,
        stats: GenerationStats,
        start: float,
        reply: tuple[int, ...],
        text: str,
        sampler_us: float,
    ) -> Iterator[GenerationEvent]:
        del start
        yield PhaseEvent("done")
        yield FinishedEvent(reason, replace(stats, sampler_us=sampler_us), text, reply)

    def _pause(self, cancel: threading.Event | None) -> None:
        self.paused.set()
        while not self.resume.wait(0.02):
            if _is_set(cancel):
                break
        self.paused.clear()

    @staticmethod
    def _sleep(seconds: float, cancel: threading.Event | None) -> None:
        if seconds <= 0:
            return
        if cancel is None:
            time.sleep(seconds)
        else:
            cancel.wait(seconds)


def _role_id(role: str) -> int:
    return {"system": 37, "user": 38, "assistant": 39}.get(role, 40)


def _word_id(word: str) -> int:
    # Prompt words map onto the vocabulary so the penalties have something to see.
    return 1 + zlib.crc32(word.encode()) % (len(FAKE_VOCAB) - 1)


def _is_set(event: threading.Event | None) -> bool:
    return event is not None and event.is_set()
