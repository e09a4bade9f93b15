"""Sampler speed: our samplers next to llama.cpp's native sampler chain, same logits.

Both sides see the same logits, written into the llama context's logits buffer
before each timed call (so both read them from a warm cache): llama.cpp's chain
reads them there through `llama_sampler_sample`, ours through the zero-copy view.
The rows are `backend.bench.sampler_modes.MODES`.
"""

from __future__ import annotations

import ctypes
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt

from backend.bench.sampler_modes import MODES, BenchMode
from backend.llama.reference import plain_llama
from sampling import Sampler

Logits = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class BenchRow:
    """Microseconds per sampled token, ours and native, on one kind of logits.

    Attributes:
        mode: The mode's name.
        logits_kind: "real" or "flat".
        ours_us: Our median time per token.
        native_us: llama.cpp's median time per token.
        steps: Tokens each side sampled per timed run.
        agreed: Of those (in the last run), how many both sides chose alike: all of
            them for argmax; the random modes draw from different generators.
    """

    mode: str
    logits_kind: str
    ours_us: float
    native_us: float
    steps: int = 0
    agreed: int = 0

    @property
    def ratio(self) -> float:
        """ours / native (≤ 1.0 meets the target)."""
        return self.ours_us / self.native_us


class ModelWords:
    """A llama-cpp-python model as a `sampling.vocabulary.Vocabulary` (for DRY)."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self.n_vocab: int = llm.n_vocab()

    def token_bytes(self, token: int, *, special: bool = False) -> bytes:
        """One token's text as bytes."""
        return bytes(self._llm.detokenize([token], special=special))

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        """Token ids of `text`, no BOS."""
        return list(self._llm.tokenize(text.encode(), add_bos=False, special=special))

    @property
    def eog_ids(self) -> tuple[int, ...]:
        """The end-of-generation token ids (what min_tokens bans)."""
        vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
        return tuple(t for t in range(self.n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, t))


def capture_real_logits(llm: Any, steps: int) -> list[Logits]:
    """Logits of `steps` greedy decode steps after a chat prompt, each copied."""
    prompt = (
        "<|im_start|>user\nWrite a short poem about the sea.<|im_end|>\n<|im_start|>assistant\n"
    )
    llm.eval(llm.tokenize(prompt.encode(), add_bos=False, special=True))
    vocab_size = llm.n_vocab()
    captured: list[Logits] = []
    for _ in range(steps):
        pointer = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        logits = np.ctypeslib.as_array(pointer, shape=(vocab_size,)).copy()
        captured.append(logits)
        llm.eval([int(np.argmax(logits))])
    return captured


def flat_logits(vocab_size: int, count: int) -> list[Logits]:
    """Standard normal logits: a flat, high-entropy distribution (an untrained model's)."""
    generator = np.random.default_rng(0)
    return [generator.standard_normal(vocab_size).astype(np.float32) for _ in range(count)]


def _time_ours(
    sampler: Sampler, logits: Sequence[Logits], view: Logits, history: Sequence[int] = ()
) -> tuple[float, list[int]]:
    """Microseconds per token, and the tokens chosen."""
    sampler.reset()
    total = 0.0
    chosen: list[int] = []
    for vector in logits:
        view[:] = vector
        started = time.perf_counter()
        step = sampler.sample(view, history)
        total += time.perf_counter() - started
        chosen.append(step.token_id)
    return total / len(logits) * 1e6, chosen


def _time_native(
    mode: BenchMode, logits: Sequence[Logits], view: Logits, ctx: Any, vocab: Any
) -> tuple[float, list[int]]:
    """Microseconds per token, and the tokens chosen."""
    chain = mode.native(vocab)
    for token in mode.history:
        llama_cpp.llama_sampler_accept(chain, token)
    chosen: list[int] = []
    try:
        total = 0.0
        for vector in logits:
            view[:] = vector
            started = time.perf_counter()
            token = llama_cpp.llama_sampler_sample(chain, ctx, -1)
            total += time.perf_counter() - started
            chosen.append(int(token))
    finally:
        llama_cpp.llama_sampler_free(chain)
    return total / len(logits) * 1e6, chosen


def run_sampler_bench(
    model_path: Path, *, steps: int = 48, repeats: int = 7, n_threads: int = 2
) -> list[BenchRow]:
    """Time every mode, ours and native alternating, on real and on flat logits.

    Returns:
        One row per mode and logits kind, each figure the median over `repeats`.
    """
    llm = plain_llama(
        str(model_path), n_ctx=512, n_threads=n_threads, verbose=False, logits_all=False
    )
    try:
        real = capture_real_logits(llm, steps)
        vocab_size = llm.n_vocab()
        pointer = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        view = np.ctypeslib.as_array(
            ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(vocab_size,)
        )
        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        words = ModelWords(llm)
        rows: list[BenchRow] = []
        for kind, logits in (("real", real), ("flat", flat_logits(vocab_size, steps))):
            for mode in MODES:
                sampler = Sampler(mode.settings, vocabulary=words)
                # Warm up: scratch buffers, band guesses, DRY's breaker tokens.
                _time_ours(sampler, logits, view, mode.history)
                _time_native(mode, logits, view, llm.ctx, vocab)
                ours, native = [], []
                ours_tokens: list[int] = []
                native_tokens: list[int] = []
                for _ in range(repeats):
                    us, ours_tokens = _time_ours(sampler, logits, view, mode.history)
                    ours.append(us)
                    us, native_tokens = _time_native(mode, logits, view, llm.ctx, vocab)
                    native.append(us)
                agreed = sum(a == b for a, b in zip(ours_tokens, native_tokens, strict=True))
                rows.append(
                    BenchRow(
                        mode.name,
                        kind,
                        statistics.median(ours),
                        statistics.median(native),
                        len(ours_tokens),
                        agreed,
                    )
                )
        return rows
    finally:
        llm.close()


def format_rows(rows: Sequence[BenchRow]) -> str:
    """The table `samplescope bench` prints."""
    lines = [
        f"{'mode':<22} {'logits':<6} {'ours µs':>9} {'native µs':>10} {'ours/native':>12}",
    ]
    for row in rows:
        mark = "" if row.ratio <= 1.0 else "  (over)"
        lines.append(
            f"{row.mode:<22} {row.logits_kind:<6} {row.ours_us:>9.1f} {row.native_us:>10.1f} "
            f"{row.ratio:>11.2f}x{mark}"
        )
    return "\n".join(lines)
