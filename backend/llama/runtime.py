"""A thin, typed layer over llama.cpp's C API (through llama-cpp-python's ctypes).

It owns one model and one context (`backend.llama.context`), and keeps the list of
tokens the KV cache holds, so the cache and that list can never disagree. Only the
thread that generates may call it (a llama context is not thread-safe).

llama-cpp-python's `Llama` class is not used: it prints to stderr from Python and
its `verbose=False` path redirects file descriptors 1 and 2 (which blanks a Textual
screen). The C API is called directly instead; llama.cpp's own log goes to a file
through `llama_log_set` (see `backend.llama.log`).
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt

from backend.llama.blas_threads import one_blas_thread
from backend.llama.context import (
    BatchToken,
    Context,
    Layout,
    LlamaError,
    Switch,
    load_model,
)
from backend.llama.contexts import PROBE_TEXT, Contexts
from backend.llama.control_vector import (
    NO_STEERING,
    ControlBuffer,
    Steering,
    control_buffer,
    model_shape,
    scaled,
)
from backend.llama.ggml_devices import require_rpc
from backend.llama.grammar import GrammarTemplates, LlamaGrammarConstraint
from backend.llama.pieces import visible_piece
from backend.llama.repack_probe import repack_survives
from backend.llama.rpc import Endpoint, probe_all
from sampling.constraint import GrammarSpec

__all__ = [
    "LlamaError",
    "LlamaRuntime",
    "RuntimeOptions",
    "check_thread_count",
    "default_threads",
    "preferred_threads",
]

_backend_lock = threading.Lock()
_backend_ready = False


def _init_backend() -> None:
    global _backend_ready
    with _backend_lock:
        if not _backend_ready:
            llama_cpp.llama_backend_init()
            one_blas_thread()  # BLAS threads spinning after np.dot steal llama.cpp's cores
            _backend_ready = True


THREADS_ENV = "SAMPLESCOPE_THREADS"
"""The thread count when none is given (`make test` fits it to its test workers)."""


def default_threads() -> int:
    """All cores: measured on 2 cores, decode runs faster on 2 threads than on 1."""
    return max(1, os.cpu_count() or 1)


def preferred_threads() -> int:
    """The threads a model gets when none are asked for: `$SAMPLESCOPE_THREADS` (kept
    to 1 .. the cores), else all cores."""
    given = os.environ.get(THREADS_ENV, "").strip()
    cores = default_threads()
    if given.isdigit() and int(given) > 0:
        return min(int(given), cores)
    return cores


def check_thread_count(n_threads: int) -> None:
    """Raise unless `n_threads` is between 1 and the number of cores.

    More threads than cores only make ggml's threads wait on each other: with
    thousands, a step takes minutes and the reply seems to hang.

    Raises:
        LlamaError: The count is out of that range; the message gives the range.
    """
    cores = default_threads()
    if not 1 <= n_threads <= cores:
        raise LlamaError(
            f"invalid thread count {n_threads}: expected 1 to {cores} (the cores of this machine)"
        )


@dataclass(frozen=True, slots=True)
class RuntimeOptions:
    """How to load a model (the `--threads --ctx --batch --gpu-layers --rpc` options).

    Attributes:
        n_gpu_layers: Layers offloaded to GPUs or RPC servers; None: none locally, all
            of them when `rpc` names servers (llama.cpp's `-ngl 99 --rpc ...`).
        rpc: RPC servers to split the model across (empty: this machine only).
        n_seq_max: How many sequences the memory holds at once (lockstep decoding;
            one with RPC servers).
        flash_attn: Flash attention as llama.cpp's tools run it (`kld`); off otherwise,
            and always with RPC servers.
        repack: Let llama.cpp repack the weights for its faster batched CPU kernels:
            a sequence's logits then depend on what is decoded beside it.
        steering: Control vectors applied to every context (`--control-vector`);
            not with RPC servers.
    """

    n_ctx: int = 4096
    n_batch: int = 256
    n_threads: int | None = None
    n_gpu_layers: int | None = None
    rpc: tuple[Endpoint, ...] = ()
    n_seq_max: int = 4
    flash_attn: bool = False
    repack: bool = False
    steering: Steering = NO_STEERING


class LlamaRuntime:
    """One loaded model with its context, KV cache bookkeeping and tokenizer.

    With RPC servers the context lives in a child process (`ChildContext`) and this
    process loads only the vocabulary; everything else is the same.

    Args:
        path: A GGUF file that `backend.llama.gguf.validate_gguf` accepted.
        options: Context size, batch, threads, GPU layers, RPC servers.

    Raises:
        LlamaError: llama.cpp could not load the model or create the context.
        RpcError: An RPC server cannot be reached or used (named in the message).
    """

    def __init__(self, path: Path, options: RuntimeOptions) -> None:
        _init_backend()
        if options.n_ctx < 16:
            raise LlamaError(f"invalid context size {options.n_ctx}: expected at least 16")
        if options.n_batch < 1:
            raise LlamaError(f"invalid batch size {options.n_batch}: expected at least 1")
        self.path = path
        self.n_threads = options.n_threads or preferred_threads()
        check_thread_count(self.n_threads)
        if options.repack and not options.rpc and not repack_survives(path):
            raise LlamaError(
                f"{path}: --repack: llama.cpp's repacked weights crash a batched decode of"
                " this model on this CPU (its AMX kernels, in this build); run without it"
            )
        if options.rpc and options.steering:
            raise LlamaError("--control-vector: not with --rpc (the model's context is remote)")
        if options.rpc:
            require_rpc()
            probe_all(options.rpc)  # before llama.cpp connects (it aborts on failure)
        remote = bool(options.rpc)
        n_gpu_layers = options.n_gpu_layers
        if n_gpu_layers is None:
            n_gpu_layers = -1 if remote else 0  # -1: every layer (llama.cpp's -ngl 99)
        # With servers, this process needs only the vocabulary: the weights go to them.
        model = load_model(
            path, n_gpu_layers=n_gpu_layers, vocab_only=remote, repack=options.repack
        )
        self.repack = options.repack
        self.rpc = options.rpc
        self.steering = options.steering
        self.control_strength = 1.0
        """What the control vectors' scales are multiplied by now."""
        self._control: ControlBuffer | None = None  # the vectors at their own scales
        self._model: Any = model
        self._vocab: Any = llama_cpp.llama_model_get_vocab(model)
        n_ctx_train = int(llama_cpp.llama_model_n_ctx_train(model))
        n_ctx = options.n_ctx if n_ctx_train <= 0 else min(options.n_ctx, n_ctx_train)
        n_batch = min(options.n_batch, n_ctx)
        self._context: Context
        try:
            if remote:
                from backend.llama.isolated import ChildContext

                self._context = ChildContext(
                    path, options.rpc, n_gpu_layers, n_ctx, n_batch, self.n_threads
                )
            else:
                control = None
                if options.steering:
                    control = control_buffer(options.steering, *model_shape(model))
                self._control = control
                try:
                    self._context = Contexts(
                        model,
                        path,
                        options.repack,
                        n_ctx,
                        n_batch,
                        self.n_threads,
                        options.n_seq_max,
                        flash_attn=options.flash_attn,
                        probe=self._probe_tokens() if options.n_seq_max > 1 else (),
                        gpu_layers=n_gpu_layers,
                        control=control,
                    )
                except LlamaError as error:
                    raise LlamaError(f"{path}: {error}") from None
        except BaseException:
            llama_cpp.llama_model_free(model)
            raise
        self.n_ctx = self._context.n_ctx
        self.n_batch = n_batch
        self.n_seq_max = self._context.n_seq_max
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        self._piece_buf = ctypes.create_string_buffer(256)
        self._piece_cache: dict[tuple[int, bool], bytes] = {}
        self._shown_cache: dict[int, str] = {}
        self._special: list[int] | None = None
        self._eog_ids: tuple[int, ...] | None = None
        self._grammars = GrammarTemplates(self._vocab, self.n_vocab)
        self.batch_invariant: bool | None = None
        """Whether a sequence decoded beside others gets exactly its logits alone
        (checked at load: `Contexts.batch_invariant`; None: one sequence at a time,
        nothing to check)."""
        if isinstance(self._context, Contexts):
            self.batch_invariant = self._context.batch_invariant

    def _probe_tokens(self) -> list[int]:
        """The load's self-check text (`PROBE_TEXT`) as tokens."""
        tokens = self.tokenize(PROBE_TEXT, special=False)
        if len(tokens) < 6:  # an odd vocabulary: any ids will do
            n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
            tokens = [t % n_vocab for t in range(100, 112)]
        return tokens

    @property
    def placement(self) -> str:
        """Where the layers are: "" on this machine, else e.g. "2 RPC servers"."""
        return self._context.placement

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
    def eog_ids(self) -> tuple[int, ...]:
        """Every end-of-generation token id (what min_tokens bans), found once."""
        if self._eog_ids is None:
            self._eog_ids = tuple(t for t in range(self.n_vocab) if self.is_eog(t))
        return self._eog_ids

    def token_constraint(self, spec: GrammarSpec) -> LlamaGrammarConstraint:
        """llama.cpp's grammar matcher for `spec` in its start state (a
        `sampling.constraint.ConstraintSource`; the grammar is parsed once).

        Raises:
            GrammarError: The grammar or schema cannot be parsed (llama.cpp's message).
        """
        return self._grammars.constraint(spec)

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

    # ---- the Model protocol: decoding and the sequences' memory ---------------------

    @property
    def seq_cells(self) -> int:
        """The cells one sequence may hold now (the chat's: n_ctx)."""
        return self._context.seq_cells

    def reserve(self, n_seqs: int, cells: int, layout: Layout | None = None) -> Switch:
        """Decode `n_seqs` sequences of up to `cells` tokens each from now on, in
        `layout` (None: the model's own): see `backend.llama.contexts`.

        Raises:
            LlamaError: llama.cpp could not make such a context.
        """
        return self._context.reserve(n_seqs, cells, layout)

    @property
    def lost(self) -> bool:
        """Whether the context is gone (an RPC server failed); `recover` restores it."""
        return self._context.lost

    def recover(self) -> None:
        """Load the model through the RPC servers again (its context was lost).

        Raises:
            RpcError: A server still cannot be reached (named in the message).
        """
        self._context.reconnect()

    def decode(self, batch: Sequence[BatchToken]) -> None:
        """Decode one batch (at most n_batch entries); logits for each sequence's last.

        Raises:
            LlamaError: llama.cpp failed; what it wrote past the batch's start
                positions is dropped again.
            ContextLostError: The context is gone (an RPC server failed).
        """
        n = len(batch)
        if n == 0:
            return
        if n > self.n_batch:
            raise LlamaError(f"internal: {n} tokens exceed the batch size {self.n_batch}")
        first = batch[0]
        single = all(
            e.seq_id == first.seq_id and e.pos == first.pos + i for i, e in enumerate(batch)
        )
        if single:
            code = self._context.decode([e.token for e in batch], first.pos, first.seq_id)
        else:
            code = self._context.decode_batch(batch)
        if code != 0:
            starts: dict[int, int] = {}
            for entry in batch:
                starts[entry.seq_id] = min(entry.pos, starts.get(entry.seq_id, entry.pos))
            for seq, start in starts.items():
                if not self._context.seq_rm(seq, start, -1):
                    self._context.clear()
            raise LlamaError(f"llama_decode failed with code {code} at position {first.pos}")

    def logits(self, row: int = -1) -> npt.NDArray[np.float32]:
        """The logits of entry `row` of the last batch: a view the next decode overwrites."""
        return self._context.logits(row)

    def seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        """Drop positions [p0, p1) of `seq` (-1: every sequence / to the end)."""
        return self._context.seq_rm(seq, p0, p1)

    def seq_cp(self, src: int, dst: int, p0: int, p1: int) -> None:
        """Make `dst` share positions [p0, p1) of `src`."""
        self._context.seq_cp(src, dst, p0, p1)

    def seq_shift(self, seq: int, p0: int, p1: int, delta: int) -> bool:
        """Move positions [p0, p1) of `seq` by `delta` (False: the memory cannot)."""
        if not self._context.can_shift():
            return False
        self._context.seq_add(seq, p0, p1, delta)
        return True

    def set_control_strength(self, strength: float) -> bool:
        """Multiply the control vectors' scales by `strength` from the next decode on
        (1: as loaded); False when nothing changed (no control vector, or that strength
        already). The KV cache then holds tokens computed under the old strength: the
        caller clears it.

        Raises:
            ControlVectorError: llama.cpp refused the vectors.
        """
        control = self._control
        if control is None or strength == self.control_strength:
            return False
        if isinstance(self._context, Contexts):
            self._context.set_control(scaled(control, strength))
        self.control_strength = strength
        return True

    def clear(self) -> None:
        """Empty the KV cache (nothing to do when the context is lost)."""
        if not self.lost:
            self._context.clear()

    def probe(self, token: int, pos: int) -> npt.NDArray[np.float32]:
        """Logits (a copy) of `token` fed alone at position `pos` into an empty cache.

        The KV cache is cleared before and after (run.c's `fwd` debug command).
        """
        self.clear()
        try:
            code = self._context.decode([token], pos, 0)
            if code != 0:
                raise LlamaError(f"llama_decode failed with code {code} at position {pos}")
            return self._context.logits(-1).copy()
        finally:
            self.clear()

    def decode_every_row(self, tokens: Sequence[int], start: int, first_row: int = 0) -> None:
        """Decode `tokens` (at most n_batch) of sequence 0 at positions start.. with
        logits for every one from `first_row` on (the last always has them): scoring
        a text; `all_logits` reads them.

        Raises:
            LlamaError: llama.cpp failed; what it wrote from `start` on is dropped.
            ContextLostError: The context is gone (an RPC server failed).
        """
        n = len(tokens)
        if n > self.n_batch:
            raise LlamaError(f"internal: {n} tokens exceed the batch size {self.n_batch}")
        if start + n > self.n_ctx:
            raise LlamaError(f"the context is full ({self.n_ctx} tokens)")
        code = self._context.decode_all(tokens, start, first_row)
        if code != 0:
            if not self._context.seq_rm(0, start, -1):
                self._context.clear()
            raise LlamaError(f"llama_decode failed with code {code} at position {start}")

    def all_logits(self, n: int) -> npt.NDArray[np.float32]:
        """The (n, vocabulary) logits of the last `decode_every_row`'s n rows with
        logits (all its tokens from `first_row` on): a view."""
        return self._context.all_logits(n)

    def close(self) -> None:
        """Free the context and the model (idempotent)."""
        self._context.close()
        self._grammars.close()
        if self._model is not None:
            llama_cpp.llama_model_free(self._model)
            self._model = None
