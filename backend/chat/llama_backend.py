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
from pathlib import Path

import numpy as np

from backend.chat.compare import common_prefix
from backend.chat.events import (
    FinishReason,
    GenerationEvent,
    NoticeEvent,
    PhaseEvent,
    PrefillProgress,
    TokenEvent,
)
from backend.chat.prompt import PromptBuilder
from backend.chat.protocol import ChatMessage, LiveSettings, ModelInfo
from backend.chat.run_state import RunState, Steer, StepInput, dropped_span, flush, forced_step
from backend.chat.template import model_template
from backend.llama.rpc import Endpoint
from backend.llama.runtime import LlamaRuntime, RuntimeOptions
from backend.llama.utf8 import Utf8Stream
from sampling.errors import SamplescopeError
from sampling.sampler import Sampler

#: At most this share of the context is reserved for the reply when fitting a prompt.
MAX_HEADROOM_SHARE = 0.5


class LlamaBackend:
    """A GGUF model behind the `backend.chat.protocol.ChatBackend` protocol.

    Build it with `LlamaBackend.load`. Exactly one thread may call `generate` (and
    `reset`, `close`, `forward`); others may read `info` and set a cancel event.
    """

    def __init__(self, runtime: LlamaRuntime, log_path: Path | None = None) -> None:
        self.runtime = runtime
        self.log_path = log_path
        self.template, self.template_notice = model_template(runtime)
        """The chat template, and why it is not the GGUF's own when it is not."""
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
        steer: Steer | None = None,
    ) -> Iterator[GenerationEvent]:
        """Generate the assistant's reply to `messages` (see `ChatBackend.generate`).

        `FinishedEvent.token_ids` holds every sampled id, the end-of-generation token
        included; `text` holds the reply without it.

        `steer` starts the reply with given tokens (`prefix`, decoded as a generation
        decodes them: no events, but part of the finished text and token ids) and may
        force the next token (`force`): the branch of a reply from one of its tokens.
        Token events then count from `len(prefix)`; `max_tokens` counts the prefix.
        """
        run = RunState(started=time.perf_counter())
        error: str | None = None
        try:
            reason = yield from self._generate(
                run, messages, settings, max_tokens, cancel, raw, steer
            )
        except SamplescopeError as failure:
            reason, error = "error", str(failure)
        except Exception as failure:  # never crash the caller: report it
            reason, error = "error", f"{type(failure).__name__}: {failure}"
        yield PhaseEvent("done")
        # What the cache holds now is what a later reply starts from: replay needs it.
        run.cached_tokens = len(self.runtime.cache)
        yield run.finished(reason, error)

    # ---- the generation -----------------------------------------------------------

    def _generate(
        self,
        run: RunState,
        messages: Sequence[ChatMessage],
        live: LiveSettings,
        max_tokens: int,
        cancel: threading.Event | None,
        raw: bool,
        steer: Steer | None = None,
    ) -> Generator[GenerationEvent, None, FinishReason]:
        rt = self.runtime
        steer = steer or Steer()
        sampler = Sampler(live.current, vocab_size=rt.n_vocab, vocabulary=rt)
        sampler.resume(len(steer.prefix))
        stream = Utf8Stream()
        ready = yield from self._prepare(run, messages, max_tokens, cancel, raw, steer, stream)
        if not ready:
            return "cancelled"

        # ---- decode: one token at a time ----
        yield PhaseEvent("decode")
        run.decode_started = time.perf_counter()
        cache = rt.cache
        for index in range(len(steer.prefix), max_tokens):
            if cancel is not None and cancel.is_set():
                return flush(run, stream, "cancelled")
            current = live.current
            if current is not sampler.settings:
                sampler.settings = current
            sampler.tail_ranks = live.tail_ranks
            # The sampler reads the last repeat_last_n tokens of the history itself.
            step = sampler.sample(rt.logits(), cache)
            if live.step_sink is not None:
                live.step_sink(index, rt.logits(), cache)
            if index == len(steer.prefix) and steer.force is not None:
                step = forced_step(step, steer.force, rt.logits(), cache)
            token = step.token_id
            if run.first_token_at is None:
                run.first_token_at = time.perf_counter()
            run.sampler_us += step.elapsed_us
            run.token_ids.append(token)
            eog = rt.is_eog(token)
            text = "" if eog else stream.feed(rt.token_bytes(token))
            if text:
                run.text.append(text)
            for note in step.notes:  # a sampler plugin switched off for the reply
                yield NoticeEvent(note)
            yield TokenEvent(index=index, step=step, text=text, piece=rt.shown_piece(token))
            if eog:
                return flush(run, stream, "eos")
            if index + 1 == max_tokens:
                break
            if len(cache) >= rt.n_ctx:
                yield NoticeEvent(f"the context of {rt.n_ctx} tokens is full: reply cut short")
                return flush(run, stream, "context_full")
            rt.decode_one(token)
        return flush(run, stream, "max_tokens")

    def _prepare(
        self,
        run: RunState,
        messages: Sequence[ChatMessage],
        max_tokens: int,
        cancel: threading.Event | None,
        raw: bool,
        steer: Steer,
        stream: Utf8Stream,
    ) -> Generator[GenerationEvent, None, bool]:
        """Fit and prefill the prompt, then decode the steer's prefix.

        Returns:
            False when cancelled during the prefill.
        """
        rt = self.runtime
        if not messages:
            raise SamplescopeError("nothing to answer: the conversation is empty")
        if max_tokens < 1:
            raise SamplescopeError(f"invalid max_tokens={max_tokens}: expected at least 1")
        if len(steer.prefix) >= max_tokens:
            raise SamplescopeError(
                f"a reply of {len(steer.prefix)} given tokens leaves no room under "
                f"max_tokens={max_tokens}"
            )
        if steer.force is not None and not 0 <= steer.force < rt.n_vocab:
            raise SamplescopeError(
                f"invalid token id {steer.force}: expected 0 .. {rt.n_vocab - 1}"
            )
        if rt.lost:
            yield NoticeEvent("the RPC connection was lost: loading the model through the servers")
            rt.reconnect()
        prompt = yield from self._fit_prompt(messages, max_tokens, raw)
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
        run.prefill_ms = (time.perf_counter() - prefill_started) * 1000
        if cancelled:
            return False
        # ---- the given start of the reply: decoded alone, as generate decoded it ----
        run.given = len(steer.prefix)
        for token in steer.prefix:
            if len(rt.cache) >= rt.n_ctx:
                raise SamplescopeError(f"the given tokens overflow the context of {rt.n_ctx}")
            run.token_ids.append(token)
            text = "" if rt.is_eog(token) else stream.feed(rt.token_bytes(token))
            if text:
                run.text.append(text)
            rt.decode_one(token)
        return True

    def _fit_prompt(
        self, messages: Sequence[ChatMessage], max_tokens: int, raw: bool
    ) -> Generator[GenerationEvent, None, list[int]]:
        """The prompt's tokens, fitted to leave room for the reply (with notices)."""
        rt = self.runtime
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
        return prompt

    def step_input(
        self,
        messages: Sequence[ChatMessage],
        prefix: Sequence[int],
        *,
        max_tokens: int = 512,
        raw: bool = False,
    ) -> StepInput:
        """What the sampler saw at token `len(prefix)` of a reply to `messages`.

        The cache is built exactly as `generate` builds it (reuse, prefill in the
        same chunks, each earlier token decoded alone), so the logits are the ones the
        sampler saw when the reply was generated on the same cache.

        Raises:
            SamplescopeError: The prompt or the tokens cannot be fed.
        """
        run = RunState(started=time.perf_counter())
        steps = self._prepare(
            run, messages, max_tokens, None, raw, Steer(tuple(prefix)), Utf8Stream()
        )
        for _ in steps:
            pass
        return StepInput(
            np.array(self.runtime.logits(), dtype=np.float32), tuple(self.runtime.cache)
        )

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
            gap = dropped_span(rt.cache, prompt, common)
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
