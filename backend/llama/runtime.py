"""A thin, typed layer over llama.cpp's C API (through llama-cpp-python's ctypes).

It owns one model, one context and one batch, and keeps the list of tokens the KV
cache holds, so the cache and that list can never disagree. Only the thread that
generates may call it (a llama context is not thread-safe).

llama-cpp-python's `Llama` class is not used: it prints to stderr from Python and
its `verbose=False` path redirects file descriptors 1 and 2 (which blanks a Textual
screen). The C API is called directly instead; llama.cpp's own log goes to a file
through `llama_log_set` (see `backend.llama.log`).
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt

from backend.errors import ModelFileError
from backend.llama.pieces import visible_piece
from sampling.errors import SamplescopeError

_backend_lock = threading.Lock()
_backend_ready = False


class LlamaError(SamplescopeError):
    """llama.cpp failed (load, context creation, decode); the message says where."""


def default_threads() -> int:
    """All cores: measured on 2 cores, decode runs faster on 2 threads than on 1."""
    return max(1, os.cpu_count() or 1)


def _init_backend() -> None:
    global _backend_ready
    with _backend_lock:
        if not _backend_ready:
            llama_cpp.llama_backend_init()
            _backend_ready = True


@dataclass(frozen=True, slots=True)
class RuntimeOptions:
    """How to load a model (the `--threads --ctx --batch --gpu-layers` options)."""

    n_ctx: int = 4096
    n_batch: int = 256
    n_threads: int | None = None
    n_gpu_layers: int = 0


class LlamaRuntime:
    """One loaded model with its context, KV cache bookkeeping and tokenizer.

    Args:
        path: A GGUF file that `backend.llama.gguf.validate_gguf` accepted.
        options: Context size, batch, threads, GPU layers.

    Raises:
        LlamaError: llama.cpp could not load the model or create the context.
    """

    def __init__(self, path: Path, options: RuntimeOptions) -> None:
        _init_backend()
        if options.n_ctx < 16:
            raise LlamaError(f"invalid context size {options.n_ctx}: expected at least 16")
        if options.n_batch < 1:
            raise LlamaError(f"invalid batch size {options.n_batch}: expected at least 1")
        self.path = path
        self.n_threads = options.n_threads or default_threads()
        if self.n_threads < 1:
            raise LlamaError(f"invalid thread count {self.n_threads}: expected at least 1")
        model_params = llama_cpp.llama_model_default_params()
        model_params.n_gpu_layers = options.n_gpu_layers
        model = llama_cpp.llama_model_load_from_file(str(path).encode("utf-8"), model_params)
        if not model:
            raise ModelFileError(f"{path}: llama.cpp could not load this model (see the log file)")
        self._model: Any = model
        self._vocab: Any = llama_cpp.llama_model_get_vocab(model)
        n_ctx_train = int(llama_cpp.llama_model_n_ctx_train(model))
        n_ctx = options.n_ctx if n_ctx_train <= 0 else min(options.n_ctx, n_ctx_train)
        self.n_batch = min(options.n_batch, n_ctx)
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = self.n_batch
        params.n_ubatch = self.n_batch
        params.n_seq_max = 1
        params.n_threads = self.n_threads
        params.n_threads_batch = self.n_threads
        # The same as llama-cpp-python's Llama default, so greedy results match it.
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        ctx = llama_cpp.llama_init_from_model(model, params)
        if not ctx:
            llama_cpp.llama_model_free(model)
            raise LlamaError(f"{path}: llama.cpp could not create a context of {n_ctx} tokens")
        self._ctx: Any = ctx
        self._memory: Any = llama_cpp.llama_get_memory(ctx)
        self.n_ctx = int(llama_cpp.llama_n_ctx(ctx))
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        self._batch: Any = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        self._piece_buf = ctypes.create_string_buffer(256)
        self._piece_cache: dict[tuple[int, bool], bytes] = {}
        self._shown_cache: dict[int, str] = {}
        self._special: list[int] | None = None
        self.cache: list[int] = []  # the tokens the KV cache holds, position by position
        # Where the llama_decode batch that computed each cached position began: a
        # token's logits and KV depend on the batch it was computed in.
        self._batch_starts: list[int] = []

    # ---- vocabulary ---------------------------------------------------------------

    def _special_ids(self) -> list[int]:
        # The tokens llama.cpp itself cuts out of a text when parsing specials.
        if self._special is None:
            mask = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
            mask |= llama_cpp.LLAMA_TOKEN_ATTR_UNKNOWN
            get_attr = llama_cpp.llama_vocab_get_attr
            vocab = self._vocab
            self._special = [t for t in range(self.n_vocab) if get_attr(vocab, t) & mask]
        return self._special

    def special_texts(self) -> list[str]:
        """The texts of the control and user-defined tokens (chat-template markers)."""
        texts = []
        for token in self._special_ids():
            text = self.token_bytes(token, special=True).decode("utf-8", errors="replace")
            if text:
                texts.append(text)
        return texts

    def is_eog(self, token: int) -> bool:
        """Whether `token` ends a generation (eos, eot, <|im_end|>, ...)."""
        return bool(llama_cpp.llama_vocab_is_eog(self._vocab, token))

    @property
    def bos(self) -> int:
        """The beginning-of-sequence token id (-1 if none)."""
        return int(llama_cpp.llama_vocab_bos(self._vocab))

    @property
    def eos(self) -> int:
        """The end-of-sequence token id (-1 if none)."""
        return int(llama_cpp.llama_vocab_eos(self._vocab))

    @property
    def add_bos(self) -> bool:
        """Whether the vocabulary asks for a BOS token at the start of a prompt."""
        return bool(llama_cpp.llama_vocab_get_add_bos(self._vocab))

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        """Token ids of `text` (no BOS added); `special` parses markers as special tokens."""
        data = text.encode("utf-8")
        if not data:
            return []
        capacity = len(data) + 8
        buf = (llama_cpp.llama_token * capacity)()
        n = llama_cpp.llama_tokenize(self._vocab, data, len(data), buf, capacity, False, special)
        if n < 0:
            capacity = -n
            buf = (llama_cpp.llama_token * capacity)()
            n = llama_cpp.llama_tokenize(
                self._vocab, data, len(data), buf, capacity, False, special
            )
            if n < 0:
                raise LlamaError(f"llama.cpp could not tokenize a text of {len(data)} bytes")
        return list(buf[:n])

    def token_bytes(self, token: int, *, special: bool = False) -> bytes:
        """The bytes of one token; control tokens give b"" unless `special`."""
        key = (token, special)
        cached = self._piece_cache.get(key)
        if cached is not None:
            return cached
        n = llama_cpp.llama_token_to_piece(self._vocab, token, self._piece_buf, 256, 0, special)
        if n < 0:
            big = ctypes.create_string_buffer(-n)
            n = llama_cpp.llama_token_to_piece(self._vocab, token, big, -n, 0, special)
            data = bytes(big.raw[:n])
        else:
            data = bytes(self._piece_buf.raw[:n])
        self._piece_cache[key] = data
        return data

    def shown_piece(self, token: int) -> str:
        """A token's text made visible for the panels (control tokens by name), cached."""
        shown = self._shown_cache.get(token)
        if shown is None:
            raw = self.token_bytes(token, special=True).decode("utf-8", "replace")
            shown = self._shown_cache[token] = visible_piece(raw)
        return shown

    def meta(self, key: str) -> str | None:
        """A metadata value of the GGUF as text, or None when absent."""
        size = 256
        while True:
            buf = ctypes.create_string_buffer(size)
            n = llama_cpp.llama_model_meta_val_str(self._model, key.encode("utf-8"), buf, size)
            if n < 0:
                return None
            if n < size:
                return buf.value.decode("utf-8", errors="replace")
            size = n + 1

    def chat_template(self) -> str | None:
        """The GGUF's `tokenizer.chat_template`, or None."""
        raw = llama_cpp.llama_model_chat_template(self._model, None)
        if not raw:
            return None
        return bytes(raw).decode("utf-8", errors="replace")

    # ---- the KV cache -------------------------------------------------------------

    def keep(self, n: int) -> int:
        """Truncate the KV cache to its first `n` tokens; returns how many are kept."""
        n = max(0, min(n, len(self.cache)))
        if n == len(self.cache):
            return n
        if not llama_cpp.llama_memory_seq_rm(self._memory, -1, n, -1):
            # A partial removal can fail on some memory types: start over.
            llama_cpp.llama_memory_clear(self._memory, True)
            n = 0
        del self.cache[n:]
        del self._batch_starts[n:]
        return n

    def remove_span(self, start: int, end: int) -> bool:
        """Take cache[start:end] out and shift the later tokens back (context shift).

        Returns:
            False (nothing changed) when the memory cannot shift positions.
        """
        if not 0 <= start < end <= len(self.cache):
            return False
        if not llama_cpp.llama_memory_can_shift(self._memory):
            return False
        if not llama_cpp.llama_memory_seq_rm(self._memory, 0, start, end):
            return False
        llama_cpp.llama_memory_seq_add(self._memory, 0, end, -1, start - end)
        del self.cache[start:end]
        # Shifted tokens keep their batch boundaries, moved back with them.
        shift = end - start
        self._batch_starts[start:] = [
            max(start, s - shift) if s >= start else s for s in self._batch_starts[end:]
        ]
        return True

    def clear(self) -> None:
        """Empty the KV cache."""
        llama_cpp.llama_memory_clear(self._memory, True)
        self.cache.clear()
        self._batch_starts.clear()

    def batch_of(self, pos: int) -> tuple[int, int]:
        """The [start, end) positions of the decode batch that computed cache[pos]."""
        start = self._batch_starts[pos]
        end = pos + 1
        while end < len(self._batch_starts) and self._batch_starts[end] == start:
            end += 1
        return start, end

    def decode(self, tokens: list[int]) -> None:
        """Append `tokens` (at most n_batch) to the cache; logits for the last one.

        Raises:
            LlamaError: llama.cpp failed; the cache is put back as it was.
        """
        n = len(tokens)
        if n == 0:
            return
        if n > self.n_batch:
            raise LlamaError(f"internal: {n} tokens exceed the batch size {self.n_batch}")
        start = len(self.cache)
        if start + n > self.n_ctx:
            raise LlamaError(f"the context is full ({self.n_ctx} tokens)")
        batch = self._batch
        token_arr, pos_arr = batch.token, batch.pos
        n_seq, seq_ids, logits = batch.n_seq_id, batch.seq_id, batch.logits
        for i, token in enumerate(tokens):
            token_arr[i] = token
            pos_arr[i] = start + i
            n_seq[i] = 1
            seq_ids[i][0] = 0
            logits[i] = 0
        logits[n - 1] = 1
        batch.n_tokens = n
        code = llama_cpp.llama_decode(self._ctx, batch)
        if code != 0:
            # Whatever llama.cpp managed to write past the recorded tokens is dropped.
            if not llama_cpp.llama_memory_seq_rm(self._memory, -1, start, -1):
                self.clear()
            raise LlamaError(f"llama_decode failed with code {code} at position {start}")
        self.cache.extend(tokens)
        self._batch_starts.extend([start] * n)

    def prefill(self, tokens: list[int]) -> Iterator[int]:
        """Append a prompt's tokens in n_batch chunks; yields how many are done.

        The one way every prefill runs (generation and replay alike), so that a
        cache rebuilt later holds the same numbers.

        Raises:
            LlamaError: llama.cpp failed (see `decode`).
        """
        for start in range(0, len(tokens), self.n_batch):
            self.decode(tokens[start : start + self.n_batch])
            yield min(start + self.n_batch, len(tokens))

    def _single(self, token: int, pos: int) -> Any:
        """The reusable batch holding one token at `pos`, logits requested."""
        batch = self._batch
        batch.token[0] = token
        batch.pos[0] = pos
        batch.n_seq_id[0] = 1
        batch.seq_id[0][0] = 0
        batch.logits[0] = 1
        batch.n_tokens = 1
        return batch

    def decode_one(self, token: int) -> None:
        """Append one token (the decode step's fast path)."""
        start = len(self.cache)
        if start >= self.n_ctx:
            raise LlamaError(f"the context is full ({self.n_ctx} tokens)")
        code = llama_cpp.llama_decode(self._ctx, self._single(token, start))
        if code != 0:
            if not llama_cpp.llama_memory_seq_rm(self._memory, -1, start, -1):
                self.clear()
            raise LlamaError(f"llama_decode failed with code {code} at position {start}")
        self.cache.append(token)
        self._batch_starts.append(start)

    def probe(self, token: int, pos: int) -> npt.NDArray[np.float32]:
        """Logits (a copy) of `token` fed alone at position `pos` into an empty cache.

        The KV cache is cleared before and after (run.c's `fwd` debug command).
        """
        self.clear()
        try:
            code = llama_cpp.llama_decode(self._ctx, self._single(token, pos))
            if code != 0:
                raise LlamaError(f"llama_decode failed with code {code} at position {pos}")
            return self.logits().copy()
        finally:
            self.clear()

    def logits(self) -> npt.NDArray[np.float32]:
        """The last decoded token's logits: a zero-copy view the next decode overwrites."""
        ptr = llama_cpp.llama_get_logits_ith(self._ctx, -1)
        if not ptr:
            raise LlamaError("llama.cpp returned no logits")
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def close(self) -> None:
        """Free the batch, the context and the model (idempotent)."""
        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx is not None:
            llama_cpp.llama_free(self._ctx)
            self._ctx = None
        if self._model is not None:
            llama_cpp.llama_model_free(self._model)
            self._model = None
        self.cache = []
        self._batch_starts = []
