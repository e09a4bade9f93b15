"""The llama.cpp chat backend: prefill and decode driven by our numpy samplers.

One `LlamaBackend` holds one model and one context. A generation renders the
conversation with the model's chat template, prefills only the tokens the KV cache
lacks (in `n_batch` chunks, cancellable between them), then decodes one token at a
time, each chosen by `sampling.Sampler` from the logits llama.cpp leaves for the last
position (`llama_get_logits_ith(ctx, -1)`, a zero-copy view).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from backend.chat.compare import common_prefix
from backend.chat.events import (
    FinishedEvent,
    FinishReason,
    GenerationEvent,
    GenerationStats,
    NoticeEvent,
    PhaseEvent,
    PrefillProgress,
    TokenEvent,
)
from backend.chat.prompt import PromptBuilder
from backend.chat.protocol import ChatMessage, LiveSettings, ModelInfo
from backend.chat.template import ChatTemplate
from backend.llama.rpc import Endpoint
from backend.llama.runtime import LlamaRuntime, RuntimeOptions
from backend.llama.utf8 import Utf8Stream
from sampling.errors import SamplescopeError
from sampling.sampler import Sampler

#: A context shift must save at least this many tokens of prefill (or reach the cache's end).
MIN_SHIFT_MATCH = 16
#: How many alignments of the cache against the prompt a context shift tries.
MAX_SHIFT_CANDIDATES = 256
#: At most this share of the context is reserved for the reply when fitting a prompt.
MAX_HEADROOM_SHARE = 0.5


@dataclass(slots=True)
class _Run:
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

    def stats(self) -> GenerationStats:
        now = time.perf_counter()
        decode_ms = 0.0 if self.decode_started is None else (now - self.decode_started) * 1000
        n = len(self.token_ids)
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
        )

    def finished(self, reason: FinishReason, error: str | None = None) -> FinishedEvent:
        return FinishedEvent(
            reason=reason,
            stats=self.stats(),
            text="".join(self.text),
            token_ids=tuple(self.token_ids),
            error=error,
        )


class LlamaBackend:
    """A GGUF model behind the `backend.chat.protocol.ChatBackend` protocol.

    Build it with `LlamaBackend.load`. Exactly one thread may call `generate` (and
    `reset`, `close`, `forward`); others may read `info` and set a cancel event.
    """

    def __init__(self, runtime: LlamaRuntime, log_path: Path | None = None) -> None:
        self.runtime = runtime
        self.log_path = log_path
        template_source = runtime.chat_template()
        bos = runtime.token_bytes(runtime.bos, special=True) if runtime.bos >= 0 else b""
        eos = runtime.token_bytes(runtime.eos, special=True) if runtime.eos >= 0 else b""
        self.template = ChatTemplate(
            template_source,
            bos_token=bos.decode("utf-8", errors="replace"),
            eos_token=eos.decode("utf-8", errors="replace"),
        )
        self.prompt = PromptBuilder(runtime, self.template)
        name = runtime.meta("general.name") or runtime.path.stem
        self._info = ModelInfo(
            name=name,
            path=str(runtime.path),
            n_ctx=runtime.n_ctx,
            n_threads=runtime.n_threads,
            n_vocab=runtime.n_vocab,
            n_batch=runtime.n_batch,
            placement=runtime.placement,
        )

    @classmethod
    def load(
        cls,
        model_path: str | Path,
        *,
        n_threads: int | None = None,
        n_ctx: int = 4096,
        n_batch: int = 256,
        n_gpu_layers: int | None = None,
        log_path: str | Path | None = None,
        rpc: Sequence[Endpoint] = (),
    ) -> LlamaBackend:
        """Validate a GGUF file, route llama.cpp's log to a file, and load the model.

        Args:
            model_path: The GGUF file.
            n_threads: Threads for decode and prefill; None means all cores.
            n_ctx: Context size in tokens (capped at the model's training context).
            n_batch: Prefill chunk size.
            n_gpu_layers: Layers to offload to GPUs or RPC servers; None: none, or every
                layer when `rpc` names servers.
            log_path: Where llama.cpp's log goes (None: the default log file).
            rpc: llama.cpp RPC servers to split the model across (its context then
                lives in a child process: `backend.llama.isolated`).

        Raises:
            ModelFileError: The file is missing, not GGUF, truncated or corrupt.
            LlamaError: llama.cpp could not create the context.
            RpcError: An RPC server cannot be reached or used (named in the message).
        """
        from backend.llama.gguf import validate_gguf
        from backend.llama.log import install_llama_log

        path = Path(model_path)
        validate_gguf(path)  # before llama.cpp reads a byte of it
        log_file = install_llama_log(None if log_path is None else Path(log_path))
        options = RuntimeOptions(n_ctx, n_batch, n_threads, n_gpu_layers, tuple(rpc))
        return cls(LlamaRuntime(path, options), log_file)

    # ---- the protocol -------------------------------------------------------------

    @property
    def info(self) -> ModelInfo:
        """The loaded model."""
        return self._info

    @property
    def context_used(self) -> int:
        """Tokens currently held in the KV cache."""
        return len(self.runtime.cache)

    def reset(self) -> None:
        """Forget the KV cache (a new chat)."""
        self.runtime.clear()

    def close(self) -> None:
        """Free the model (idempotent)."""
        self.runtime.close()

    def tokenize_messages(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The prompt tokens `generate` would feed for `messages` (before fitting)."""
        return self.prompt.tokens(messages)

    def generate(
        self,
        messages: Sequence[ChatMessage],
        settings: LiveSettings,
        *,
        max_tokens: int = 512,
        cancel: threading.Event | None = None,
        raw: bool = False,
    ) -> Iterator[GenerationEvent]:
        """Generate the assistant's reply to `messages` (see `ChatBackend.generate`).

        `FinishedEvent.token_ids` holds every sampled id, the end-of-generation token
        included; `text` holds the reply without it.
        """
        run = _Run(started=time.perf_counter())
        try:
            reason = yield from self._generate(run, messages, settings, max_tokens, cancel, raw)
        except SamplescopeError as error:
            yield PhaseEvent("done")
            yield run.finished("error", str(error))
            return
        except Exception as error:  # never crash the caller: report it
            yield PhaseEvent("done")
            yield run.finished("error", f"{type(error).__name__}: {error}")
            return
        yield PhaseEvent("done")
        yield run.finished(reason)

    # ---- the generation -----------------------------------------------------------

    def _generate(
        self,
        run: _Run,
        messages: Sequence[ChatMessage],
        live: LiveSettings,
        max_tokens: int,
        cancel: threading.Event | None,
        raw: bool,
    ) -> Generator[GenerationEvent, None, FinishReason]:
        rt = self.runtime
        if not messages:
            raise SamplescopeError("nothing to answer: the conversation is empty")
        if max_tokens < 1:
            raise SamplescopeError(f"invalid max_tokens={max_tokens}: expected at least 1")
        if rt.lost:
            yield NoticeEvent("the RPC connection was lost: loading the model through the servers")
            rt.reconnect()
        settings = live.current
        sampler = Sampler(settings, vocab_size=rt.n_vocab, vocabulary=rt)

        headroom = min(max_tokens, int(rt.n_ctx * MAX_HEADROOM_SHARE))
        budget = rt.n_ctx - headroom
        if raw:
            prompt = self.prompt.raw_tokens(messages[-1].content)
            if len(prompt) > budget:
                cut = len(prompt) - budget
                # Keep a leading BOS: cut the oldest text after it.
                keep = 1 if prompt[0] == rt.bos else 0
                prompt = prompt[:keep] + prompt[cut + keep :]
                yield NoticeEvent(f"cut the oldest {cut} tokens of the prompt to fit the context")
        else:
            fitted = self.prompt.fit(messages, budget)
            prompt = fitted.tokens
            if fitted.dropped:
                yield NoticeEvent(
                    f"dropped the {fitted.dropped} oldest message(s) to fit the context"
                    f" of {rt.n_ctx} tokens (the system prompt is kept)"
                )
            if fitted.truncated_tokens:
                yield NoticeEvent(
                    f"cut the first {fitted.truncated_tokens} tokens of the last message"
                    f" to fit the context of {rt.n_ctx} tokens"
                )
        if not prompt:
            raise SamplescopeError("the prompt is empty")
        run.prompt_tokens = len(prompt)

        # ---- prefill: only what the cache lacks, and at least the last token ----
        yield PhaseEvent("prefill")
        prefill_started = time.perf_counter()
        kept = self.reuse_cache(prompt)
        todo = prompt[kept:]
        run.prefilled = len(todo)
        cancelled = cancel is not None and cancel.is_set()
        if not cancelled:
            for done in rt.prefill(todo):
                yield PrefillProgress(done=done, total=len(todo))
                cancelled = cancel is not None and cancel.is_set() and done < len(todo)
                if cancelled:
                    break
        if cancelled:
            run.prefill_ms = (time.perf_counter() - prefill_started) * 1000
            return "cancelled"
        run.prefill_ms = (time.perf_counter() - prefill_started) * 1000

        # ---- decode: one token at a time ----
        yield PhaseEvent("decode")
        run.decode_started = time.perf_counter()
        stream = Utf8Stream()
        cache = rt.cache
        for index in range(max_tokens):
            if cancel is not None and cancel.is_set():
                return _flush(run, stream, "cancelled")
            current = live.current
            if current is not sampler.settings:
                sampler.settings = current
            # The sampler reads the last repeat_last_n tokens of the history itself.
            step = sampler.sample(rt.logits(), cache)
            token = step.token_id
            if run.first_token_at is None:
                run.first_token_at = time.perf_counter()
            run.sampler_us += step.elapsed_us
            run.token_ids.append(token)
            eog = rt.is_eog(token)
            text = "" if eog else stream.feed(rt.token_bytes(token))
            if text:
                run.text.append(text)
            yield TokenEvent(index=index, step=step, text=text, piece=rt.shown_piece(token))
            if eog:
                return _flush(run, stream, "eos")
            if index + 1 == max_tokens:
                break
            if len(cache) >= rt.n_ctx:
                yield NoticeEvent(f"the context of {rt.n_ctx} tokens is full: reply cut short")
                return _flush(run, stream, "context_full")
            rt.decode_one(token)
        return _flush(run, stream, "max_tokens")

    def reuse_cache(self, prompt: list[int]) -> int:
        """Keep the longest cached prefix of `prompt`, less what must be computed again.

        The last prompt token is always computed again (its logits are sampled). When
        the cache holds the whole prompt (a regenerate, a compare column), the batch
        that computed the last token is run again as it was, so the first logits equal
        the first run's: llama.cpp's numbers depend on how tokens were batched (a
        token decoded alone differs by up to ~1 in a logit), and a seed must give the
        same reply whether the prompt was cached or not.

        When old turns were dropped the prompt is the cache minus a span: take that span
        out of the KV cache (a context shift) instead of prefilling everything again.

        Returns:
            How many prompt tokens the cache now holds.
        """
        rt = self.runtime
        common = common_prefix(rt.cache, prompt)
        if common < len(rt.cache) and common < len(prompt) - 1:
            gap = _dropped_span(rt.cache, prompt, common)
            if gap and rt.remove_span(common, common + gap):
                common = common_prefix(rt.cache, prompt)
        keep = min(common, len(prompt) - 1)
        if common == len(prompt):
            start, end = rt.batch_of(len(prompt) - 1)
            if end == len(prompt):
                keep = start
        return rt.keep(keep)

    # ---- debugging ----------------------------------------------------------------

    def forward(self, token: int, pos: int = 0) -> list[tuple[int, float]]:
        """Logits of one forward step: `token` alone at position `pos` (run.c's `fwd`).

        The KV cache is cleared (a fresh context). A lone token attends only to
        itself, so llama.cpp's logits do not depend on `pos`; run.c's differ because
        its cache holds zeros (or stale rows) at the earlier positions.

        Returns:
            Every (token id, logit) pair, by descending logit.

        Raises:
            SamplescopeError: The token id or the position is out of range.
        """
        rt = self.runtime
        if not 0 <= token < rt.n_vocab:
            raise SamplescopeError(f"invalid token id {token}: expected 0 .. {rt.n_vocab - 1}")
        if not 0 <= pos < rt.n_ctx:
            raise SamplescopeError(f"invalid position {pos}: expected 0 .. {rt.n_ctx - 1}")
        logits = rt.probe(token, pos)
        order = np.argsort(-logits, kind="stable")
        return [(int(i), float(logits[i])) for i in order]


def _flush(run: _Run, stream: Utf8Stream, reason: FinishReason) -> FinishReason:
    # A character cut off by max_tokens or a cancel is dropped (it is unfinished, not
    # wrong); one left dangling when the model itself stopped is shown as U+FFFD.
    tail = stream.flush() if reason == "eos" else ""
    if tail:
        run.text.append(tail)
    return reason


def _dropped_span(cache: Sequence[int], prompt: Sequence[int], start: int) -> int:
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
