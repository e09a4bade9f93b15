"""One llama.cpp context: decode a batch, read the logits, edit the KV cache.

`LlamaRuntime` keeps the bookkeeping (which token each cached position holds) and
talks to a context through the small `Context` interface: `LocalContext` calls
llama.cpp in this process; `backend.llama.isolated.ChildContext` runs a
`LocalContext` in a child process (a model split across RPC servers: llama.cpp
aborts the process that loses a server, and that must not be the app).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import llama_cpp
import numpy as np
import numpy.typing as npt

from backend.errors import ModelFileError
from backend.llama.control_vector import ControlBuffer, apply_control
from sampling.errors import SamplescopeError


class LlamaError(SamplescopeError):
    """llama.cpp failed (load, context creation, decode); the message says where."""


class ContextLostError(LlamaError):
    """The context is gone with its KV cache (the child process holding it died)."""


Switch = Literal["kept", "fresh", "chat"]
"""What `Context.reserve` did: kept the context in use (its memory as it was), made a
fresh one (an empty memory), or went back to the chat's (its memory as it was left)."""


@dataclass(frozen=True, slots=True)
class Layout:
    """How a lockstep context lays its sequences out and which weights it runs.

    Attributes:
        streams: One KV stream per sequence (else one unified stream for all).
        repack: Weights repacked by llama.cpp's CPU backend (its batched kernels).
    """

    streams: bool = True
    repack: bool = False

    @property
    def legacy(self) -> bool:
        """Whether this is how lockstep replies were decoded before streams."""
        return not self.streams and self.repack


class BatchToken(Protocol):
    """One token of a decode batch: its id, its position, its sequence."""

    @property
    def token(self) -> int: ...

    @property
    def pos(self) -> int: ...

    @property
    def seq_id(self) -> int: ...


class Context(Protocol):
    """What the runtime needs from a llama context.

    Attributes:
        n_ctx: Context size.
        n_batch: Largest batch.
        n_seq_max: How many sequences the memory holds.
        placement: Where the layers are: "" here, else e.g. "2 RPC servers".
        lost: The context is gone with its cache (a child process died).
    """

    n_ctx: int
    n_batch: int
    n_seq_max: int
    placement: str
    lost: bool

    @property
    def seq_cells(self) -> int:
        """The cells one sequence may hold now."""
        ...

    def reserve(self, n_seqs: int, cells: int, layout: Layout | None = None) -> Switch:
        """Decode `n_seqs` sequences of up to `cells` tokens each from now on (see
        `backend.llama.contexts.Contexts.reserve`); returns what it did."""
        ...

    def reconnect(self) -> None:
        """Create the context again after a loss (empty cache)."""
        ...

    def decode(self, tokens: Sequence[int], start: int, seq: int) -> int:
        """Decode `tokens` of `seq` at positions start..; logits for the last one;
        llama's code."""
        ...

    def decode_batch(self, batch: Sequence[BatchToken]) -> int:
        """Decode tokens of several sequences; logits for each one's last; llama's code."""
        ...

    def logits(self, row: int) -> npt.NDArray[np.float32]:
        """The logits of row `row` of the last batch (-1: its last; valid until the
        next decode)."""
        ...

    def seq_cp(self, src: int, dst: int, p0: int, p1: int) -> None:
        """`llama_memory_seq_cp`: `dst` shares positions [p0, p1) of `src`."""
        ...

    def decode_all(self, tokens: Sequence[int], start: int, first_row: int = 0) -> int:
        """Decode `tokens` at positions start.. with logits for every one from
        `first_row` on; llama's code."""
        ...

    def all_logits(self, n: int) -> npt.NDArray[np.float32]:
        """The (n, vocabulary) logits of the last `decode_all`'s n rows with logits,
        in order."""
        ...

    def seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        """`llama_memory_seq_rm`: drop positions [p0, p1) (-1: to the end)."""
        ...

    def seq_add(self, seq: int, p0: int, p1: int, delta: int) -> None:
        """`llama_memory_seq_add`: shift positions [p0, p1) by `delta`."""
        ...

    def can_shift(self) -> bool:
        """Whether the memory can shift positions (a context shift)."""
        ...

    def clear(self) -> None:
        """Empty the KV cache."""
        ...

    def close(self) -> None:
        """Free everything (idempotent)."""
        ...


def load_model(
    path: Path,
    *,
    n_gpu_layers: int = 0,
    devices: Any = None,
    vocab_only: bool = False,
    repack: bool = False,
) -> Any:
    """`llama_model_load_from_file` with samplescope's parameters.

    Args:
        path: The GGUF file.
        n_gpu_layers: Layers to offload (negative: all).
        devices: A NULL-terminated `ggml_backend_dev_t` array, or None (llama.cpp's pick).
        vocab_only: Load the vocabulary and metadata only, no weights.
        repack: Let llama.cpp's CPU backend put the weights in its extra buffer types
            (`use_extra_bufts`: repacked Q4_0/Q4_K... for AVX2/NEON kernels, or AMX
            tiles). Off: their batched kernels sum in another order than the one-row
            kernel (a sequence's logits would depend on what is decoded beside it),
            and on an AMX CPU this build's AMX kernels crash on any batch of two or
            more tokens (measured: SmolLM2 Q4_1 and Q4_0, llama-cpp-python 0.3.36).

    Raises:
        ModelFileError: llama.cpp could not load it.
    """
    params = llama_cpp.llama_model_default_params()
    params.n_gpu_layers = n_gpu_layers
    params.vocab_only = vocab_only
    params.use_extra_bufts = repack
    if devices is not None:
        params.devices = ctypes.cast(devices, ctypes.c_void_p)
    model = llama_cpp.llama_model_load_from_file(str(path).encode("utf-8"), params)
    if not model:
        raise ModelFileError(f"{path}: llama.cpp could not load this model (see the log file)")
    return model


def context_params(
    n_ctx: int,
    n_batch: int,
    n_threads: int,
    n_seq_max: int = 1,
    *,
    unified: bool = False,
    flash_attn: bool = False,
) -> Any:
    """The llama_context_params every samplescope context uses.

    Each sequence has its own KV stream (`kv_unified = false`) of n_ctx / n_seq_max
    cells (llama.cpp rounds each stream up to a multiple of 256): a sequence's
    attention then reads only its own cells, laid out as when it is decoded alone, so
    its logits do not depend on the sequences beside it. `unified`: one stream of
    n_ctx cells shared by every sequence (how lockstep replies were decoded before).
    Flash attention is off unless `flash_attn` leaves it to llama.cpp (its "auto", as
    llama.cpp's own tools run: `samplescope kld` matches llama-perplexity so).
    """
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = n_ctx
    params.n_batch = n_batch
    params.n_ubatch = n_batch
    params.n_seq_max = n_seq_max
    params.kv_unified = unified
    params.n_threads = n_threads
    params.n_threads_batch = n_threads
    # The same as llama-cpp-python's Llama default, so greedy results match it.
    params.flash_attn_type = (
        llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO
        if flash_attn
        else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
    )
    return params


class LocalContext:
    """A llama context and its reusable batch, in this process.

    Args:
        model: A loaded `llama_model` (not owned: the caller frees it after `close`).
        n_ctx: Context size.
        n_batch: Largest batch.
        n_threads: Threads for decode and prefill.
        n_seq_max: How many sequences the memory holds at once.
        unified: One KV stream shared by every sequence (else one stream each).
        flash_attn: Flash attention as llama.cpp decides it (else off).
        control: Control vectors to apply to the context (None: none).

    Attributes:
        seq_cells: The cells one sequence may hold (its stream's; n_ctx when unified).

    Raises:
        LlamaError: llama.cpp could not create the context.
    """

    def __init__(
        self,
        model: Any,
        n_ctx: int,
        n_batch: int,
        n_threads: int,
        n_seq_max: int = 1,
        *,
        unified: bool = False,
        flash_attn: bool = False,
        control: ControlBuffer | None = None,
    ) -> None:
        params = context_params(
            n_ctx, n_batch, n_threads, n_seq_max, unified=unified, flash_attn=flash_attn
        )
        ctx = llama_cpp.llama_init_from_model(model, params)
        if not ctx:
            raise LlamaError(f"llama.cpp could not create a context of {n_ctx} tokens")
        try:
            apply_control(ctx, control)
        except BaseException:
            llama_cpp.llama_free(ctx)
            raise
        self._ctx: Any = ctx
        self._memory: Any = llama_cpp.llama_get_memory(ctx)
        self.n_ctx = int(llama_cpp.llama_n_ctx(ctx))
        self.seq_cells = int(llama_cpp.llama_n_ctx_seq(ctx))
        self.unified = unified
        self.n_batch = n_batch
        self.n_seq_max = n_seq_max
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model)))
        self._batch: Any = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self.placement = ""
        self.lost = False  # an in-process context is never lost

    def reconnect(self) -> None:
        """Nothing to do: an in-process context is never lost."""

    def decode(self, tokens: Sequence[int], start: int, seq: int) -> int:
        """Decode `tokens` (at most n_batch) of `seq` at positions start..; returns
        llama's code."""
        return self._decode(tokens, start, seq, every_row=False)

    def decode_all(self, tokens: Sequence[int], start: int, first_row: int = 0) -> int:
        """Decode `tokens` (at most n_batch) of sequence 0 with logits for every one
        from `first_row` on (scoring a text)."""
        return self._decode(tokens, start, 0, every_row=True, first_row=first_row)

    def _decode(
        self, tokens: Sequence[int], start: int, seq: int, *, every_row: bool, first_row: int = 0
    ) -> int:
        batch = self._batch
        n = len(tokens)
        if n == 1:  # the decode step's fast path
            batch.token[0] = tokens[0]
            batch.pos[0] = start
            batch.n_seq_id[0] = 1
            batch.seq_id[0][0] = seq
            batch.logits[0] = 1
        else:
            every = 1 if every_row else 0
            token_arr, pos_arr = batch.token, batch.pos
            n_seq, seq_ids, logits = batch.n_seq_id, batch.seq_id, batch.logits
            for i, token in enumerate(tokens):
                token_arr[i] = token
                pos_arr[i] = start + i
                n_seq[i] = 1
                seq_ids[i][0] = seq
                logits[i] = every if i >= first_row else 0
            logits[n - 1] = 1
        batch.n_tokens = n
        return int(llama_cpp.llama_decode(self._ctx, batch))

    def decode_batch(self, entries: Sequence[BatchToken]) -> int:
        """Decode tokens of several sequences; logits for each one's last entry."""
        batch = self._batch
        last: dict[int, int] = {}
        for i, entry in enumerate(entries):
            batch.token[i] = entry.token
            batch.pos[i] = entry.pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = entry.seq_id
            batch.logits[i] = 0
            last[entry.seq_id] = i
        for i in last.values():
            batch.logits[i] = 1
        batch.n_tokens = len(entries)
        return int(llama_cpp.llama_decode(self._ctx, batch))

    def logits(self, row: int) -> npt.NDArray[np.float32]:
        """A zero-copy view of llama.cpp's logits of `row` of the last batch (-1: its
        last): the next decode overwrites it."""
        ptr = llama_cpp.llama_get_logits_ith(self._ctx, row)
        if not ptr:
            raise LlamaError("llama.cpp returned no logits")
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def all_logits(self, n: int) -> npt.NDArray[np.float32]:
        """A zero-copy (n, vocabulary) view of the rows with logits of the last
        `decode_all`."""
        ptr = llama_cpp.llama_get_logits(self._ctx)
        if not ptr:
            raise LlamaError("llama.cpp returned no logits")
        return np.ctypeslib.as_array(ptr, shape=(n, self.n_vocab))

    def seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        """Drop positions [p0, p1) of `seq` (-1: every sequence / to the end)."""
        return bool(llama_cpp.llama_memory_seq_rm(self._memory, seq, p0, p1))

    def seq_cp(self, src: int, dst: int, p0: int, p1: int) -> None:
        """Make `dst` share positions [p0, p1) of `src`."""
        llama_cpp.llama_memory_seq_cp(self._memory, src, dst, p0, p1)

    def seq_add(self, seq: int, p0: int, p1: int, delta: int) -> None:
        """Shift positions [p0, p1) of `seq` by `delta`."""
        llama_cpp.llama_memory_seq_add(self._memory, seq, p0, p1, delta)

    def can_shift(self) -> bool:
        """Whether the memory can shift positions."""
        return bool(llama_cpp.llama_memory_can_shift(self._memory))

    def clear(self) -> None:
        """Empty the KV cache."""
        llama_cpp.llama_memory_clear(self._memory, True)

    def set_threads(self, n_threads: int) -> None:
        """Decode and prefill on `n_threads` threads from now on."""
        llama_cpp.llama_set_n_threads(self._ctx, n_threads, n_threads)

    def set_control(self, control: ControlBuffer) -> None:
        """Apply other control vectors from the next decode on (what the memory holds
        was computed under the old ones: clear it).

        Raises:
            ControlVectorError: llama.cpp refused them.
        """
        apply_control(self._ctx, control)

    def close(self) -> None:
        """Free the batch and the context (idempotent)."""
        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx is not None:
            llama_cpp.llama_free(self._ctx)
            self._ctx = None
