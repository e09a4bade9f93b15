"""What exact lockstep costs one sequence: the weights as loaded against repacked ones.

samplescope loads a model without llama.cpp's extra buffer types (its repacked
weights for the AVX2/NEON kernels, or AMX tiles), whose batched kernels would make a
sequence's logits depend on its neighbours. `run_repack_bench(model_path)` measures
what that costs a single sequence, on the default model and on a Q4_0 copy of it
(written by llama.cpp's quantizer, a type the CPU backend repacks): decode tok/s (one
token a `llama_decode`, greedy) and prefill tok/s (a prompt in n_batch chunks) with
the plain weights against the repacked ones, alternating, best of `repeats`. Where the
repacked kernels crash a batch (`backend.llama.repack_probe`: this build's AMX kernels
do), the prefill row is not measured. Run: `samplescope bench --only backend`.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import llama_cpp

from backend.llama.context import LocalContext, load_model
from backend.llama.quantize import quantized_copy
from backend.llama.repack_probe import repack_survives

#: The single-sequence speed exact lockstep may cost before `--repack` is worth it.
TARGET = 0.95


@dataclass(frozen=True, slots=True)
class RepackRow:
    """One figure with the plain weights next to the repacked ones.

    Attributes:
        metric: What is measured (model and way).
        plain: tok/s with the weights as samplescope loads them.
        repacked: tok/s with llama.cpp's extra buffer types (None: they crash here).
    """

    metric: str
    plain: float
    repacked: float | None

    @property
    def ratio(self) -> float | None:
        """plain / repacked (None when the repacked figure is missing)."""
        return None if not self.repacked else self.plain / self.repacked


def _decode_tps(context: LocalContext, tokens: int) -> float:
    context.clear()
    token = 100 % context.n_vocab
    started = time.perf_counter()
    for pos in range(tokens):
        if context.decode([token], pos, 0) != 0:
            raise RuntimeError("llama_decode failed")
        token = int(context.logits(-1).argmax())
    return tokens / (time.perf_counter() - started)


def _prefill_tps(context: LocalContext, tokens: int) -> float:
    context.clear()
    prompt = [(101 + 37 * i) % context.n_vocab for i in range(tokens)]
    started = time.perf_counter()
    for start in range(0, tokens, context.n_batch):
        if context.decode(prompt[start : start + context.n_batch], start, 0) != 0:
            raise RuntimeError("llama_decode failed")
    return tokens / (time.perf_counter() - started)


def _best(
    path: Path, repack: bool, measure: Callable[[LocalContext], float], n_threads: int
) -> float:
    model = load_model(path, repack=repack)
    context = LocalContext(model, 2048, 256, n_threads, 1)
    try:
        return measure(context)
    finally:
        context.close()
        llama_cpp.llama_model_free(model)


def _rows_for(
    name: str, path: Path, n_threads: int, decode_tokens: int, prefill_tokens: int, repeats: int
) -> list[RepackRow]:
    batches = repack_survives(path)
    ways: list[tuple[str, Callable[[LocalContext], float], bool]] = [
        (f"decode tok/s, {name}", lambda c: _decode_tps(c, decode_tokens), True),
        (
            f"prefill tok/s, {name} ({prefill_tokens} tokens)",
            lambda c: _prefill_tps(c, prefill_tokens),
            batches,
        ),
    ]
    rows = []
    for metric, measure, repackable in ways:
        plain, repacked = 0.0, 0.0
        for _ in range(repeats):  # alternating: a disturbance hits both
            plain = max(plain, _best(path, False, measure, n_threads))
            if repackable:
                repacked = max(repacked, _best(path, True, measure, n_threads))
        rows.append(RepackRow(metric, plain, repacked if repackable else None))
    return rows


def run_repack_bench(
    model_path: Path,
    *,
    n_threads: int,
    decode_tokens: int = 64,
    prefill_tokens: int = 512,
    repeats: int = 3,
) -> list[RepackRow]:
    """Measure (see the module doc) on `model_path` and its Q4_0 copy."""
    llama_cpp.llama_backend_init()
    with tempfile.TemporaryDirectory(prefix="samplescope-repack-") as folder:
        q4_0 = quantized_copy(model_path, Path(folder), name="Q4_0")
        rows = _rows_for(
            model_path.stem, model_path, n_threads, decode_tokens, prefill_tokens, repeats
        )
        rows += _rows_for("its Q4_0 copy", q4_0, n_threads, decode_tokens, prefill_tokens, repeats)
    return rows


def format_repack_rows(rows: list[RepackRow]) -> str:
    """The rows as a markdown table."""
    lines = [
        "| single sequence | plain weights | repacked | plain / repacked | target |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        if row.ratio is None:
            lines.append(f"| {row.metric} | {row.plain:.1f} | crashes a batch here | | |")
            continue
        verdict = "ok" if row.ratio >= TARGET else "costs more: --repack offered"
        lines.append(
            f"| {row.metric} | {row.plain:.1f} | {row.repacked:.1f} | {row.ratio:.3f} |"
            f" >= {TARGET} {verdict} |"
        )
    return "\n".join(lines)
