"""The backend against llama-cpp-python's own loop: decode, prefill, peak memory.

`run_backend_bench(model_path)` measures, on the same model, threads and prompt:

- decode tokens/s of `LlamaBackend.generate` (greedy, and llama.cpp's default
  settings) against a bare llama-cpp-python loop (`Llama.eval` of one token +
  `np.argmax` of the logits), which feeds the very tokens our run sampled so both
  compute the same sequence (target: ratio >= 0.95);
- prefill tokens/s of `generate` against `Llama.eval` of the same prompt tokens with
  the same batch size (target >= 0.95);
- peak RSS (VmHWM) of a fresh process that loads the model and generates, against the model file
  + its KV cache + 150 MB (target: below), and the same for llama-cpp-python.

The runs alternate and each figure is the best of `repeats` (the machine is shared:
the best run is the least disturbed one). Run: `samplescope bench --only backend`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np

from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.config.model_path import resolve_model_path
from backend.llama.reference import plain_llama
from backend.session.llama_backend import LlamaBackend
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.samplers.temperature import TemperatureParams
from sampling.settings.record import SamplerSettings

DECODE_PROMPT = "Write a long story about a lighthouse keeper and a storm."
PREFILL_TEXT = (
    "The lighthouse stood on the last rock of the island, and every night its keeper "
    "climbed the spiral stairs to light the lamp. "
)
RSS_ALLOWANCE_MB = 150.0
MB = 1024.0 * 1024.0


@dataclass(frozen=True, slots=True)
class BackendBenchRow:
    """One figure, ours next to the reference.

    Attributes:
        metric: What is measured.
        ours: Our figure.
        reference: The reference figure (llama-cpp-python, or the memory budget).
        unit: The unit of both.
        higher_is_better: Whether ours should exceed the reference (speed) or stay
            below it (memory).
        target: The ratio ours/reference must reach (>=) or stay under (<=).
        agreed: For the greedy decode row: of the tokens ours sampled, how many the
            reference loop's argmax chose too at the same step (all, when both compute
            the same numbers); None for the other rows.
    """

    metric: str
    ours: float
    reference: float
    unit: str
    higher_is_better: bool
    target: float
    agreed: int | None = None

    @property
    def ratio(self) -> float:
        """ours / reference."""
        return self.ours / self.reference if self.reference else float("inf")

    @property
    def passed(self) -> bool:
        """Whether the target is met."""
        return self.ratio >= self.target if self.higher_is_better else self.ratio <= self.target


def _reference_llama(model_path: Path, n_ctx: int, n_batch: int, n_threads: int) -> Any:
    # verbose=False: a command-line run may have fds 1/2 redirected while loading
    # (never the app), and llama-cpp-python then keeps its metadata dump to itself.
    return plain_llama(
        str(model_path),
        n_ctx=n_ctx,
        n_batch=n_batch,
        n_ubatch=n_batch,
        n_threads=n_threads,
        n_threads_batch=n_threads,
        verbose=False,
    )


def _ours_decode(
    backend: LlamaBackend, settings: SamplerSettings, max_tokens: int
) -> tuple[float, list[int], FinishedEvent]:
    backend.reset()
    finished = None
    for event in backend.generate(
        [ChatMessage("user", DECODE_PROMPT)], LiveSettings(settings), max_tokens=max_tokens
    ):
        if isinstance(event, FinishedEvent):
            finished = event
    assert finished is not None
    if finished.reason == "error":
        raise RuntimeError(finished.error)
    return finished.stats.decode_tps, list(finished.token_ids), finished


def _bare_decode(llm: Any, prompt: list[int], tokens: list[int]) -> tuple[float, list[int]]:
    """The bare loop: argmax of the logits view, then eval the next token.

    Returns:
        Tokens per second, and the argmax of each step.
    """
    llm.reset()
    llm.eval(prompt)
    n_vocab = llm.n_vocab()
    ctx = llm.ctx
    chosen: list[int] = []
    started = time.perf_counter()
    for index in range(len(tokens)):
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1), shape=(n_vocab,))
        chosen.append(int(np.argmax(logits)))
        if index + 1 < len(tokens):
            llm.eval([tokens[index]])
    elapsed = time.perf_counter() - started
    return len(tokens) / elapsed, chosen


def _ours_prefill(backend: LlamaBackend, text: str) -> float:
    backend.reset()
    finished = None
    for event in backend.generate(
        [ChatMessage("user", text)],
        LiveSettings(SamplerSettings(temperature=0.0)),
        max_tokens=1,
        raw=True,
    ):
        if isinstance(event, FinishedEvent):
            finished = event
    assert finished is not None and finished.reason != "error", finished
    return finished.stats.prefilled_tokens / (finished.stats.prefill_ms / 1000.0)


def _bare_prefill(llm: Any, tokens: list[int]) -> float:
    llm.reset()
    started = time.perf_counter()
    llm.eval(tokens)
    return len(tokens) / (time.perf_counter() - started)


def kv_cache_bytes(backend: LlamaBackend) -> int:
    """The KV cache's size in bytes (f16 keys and values for every layer and position)."""
    model = backend.runtime._model
    n_layer = llama_cpp.llama_model_n_layer(model)
    n_embd = llama_cpp.llama_model_n_embd(model)
    n_head = llama_cpp.llama_model_n_head(model)
    n_head_kv = llama_cpp.llama_model_n_head_kv(model)
    per_token = 2 * n_layer * (n_embd // n_head) * n_head_kv * 2  # K and V, 2 bytes each
    return int(per_token * backend.info.n_ctx)


_RSS_CHILD = r"""
import json, resource, sys
from pathlib import Path
kind, model, n_ctx, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
from backend.llama.log import install_llama_log
install_llama_log(Path(sys.argv[5]))
if kind == "ours":
    from backend.session.llama_backend import LlamaBackend
    from backend.chat.protocol import ChatMessage, LiveSettings
    from sampling.built_in import DEFAULT_CHAT_SETTINGS
    b = LlamaBackend.load(model, n_ctx=n_ctx, n_threads=threads, log_path=sys.argv[5])
    messages = [ChatMessage("user", "Tell me a story.")]
    for _ in b.generate(messages, LiveSettings(DEFAULT_CHAT_SETTINGS), max_tokens=64):
        pass
else:
    from backend.llama.reference import plain_llama
    llm = plain_llama(model, n_ctx=n_ctx, n_threads=threads, verbose=True)
    llm.create_chat_completion([{"role": "user", "content": "Tell me a story."}], max_tokens=64)
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the parent process.
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]
peak = int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"maxrss_kb": peak}))
"""


def peak_rss_mb(kind: str, model_path: Path, n_ctx: int, n_threads: int, log_path: Path) -> float:
    """Peak RSS in MB of a fresh process that loads the model and generates 64 tokens."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _RSS_CHILD,
            kind,
            str(model_path),
            str(n_ctx),
            str(n_threads),
            str(log_path),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    last = out.stdout.strip().splitlines()[-1]
    return float(json.loads(last)["maxrss_kb"]) / 1024.0


def run_backend_bench(
    model_path: Path | None = None,
    *,
    n_threads: int | None = None,
    n_ctx: int = 4096,
    n_batch: int = 256,
    decode_tokens: int = 128,
    prefill_tokens: int = 512,
    repeats: int = 3,
    measure_rss: bool = True,
    log_path: Path | None = None,
) -> list[BackendBenchRow]:
    """Measure the backend against llama-cpp-python (see the module docstring)."""
    path = resolve_model_path(None) if model_path is None else Path(model_path)
    threads = n_threads or (os.cpu_count() or 1)
    log = log_path or Path(os.environ.get("TMPDIR", "/tmp")) / "samplescope-bench-llama.log"
    ours = LlamaBackend.load(path, n_ctx=n_ctx, n_batch=n_batch, n_threads=threads, log_path=log)
    llm = _reference_llama(path, n_ctx, n_batch, threads)
    rows: list[BackendBenchRow] = []
    try:
        prompt = ours.tokenize_messages([ChatMessage("user", DECODE_PROMPT)])
        for label, settings in (
            ("greedy", SamplerSettings(temperature=0.0)),
            ("llama.cpp defaults", DEFAULT_CHAT_SETTINGS),
        ):
            best_ours = best_bare = 0.0
            tokens: list[int] = []
            chosen: list[int] = []
            for _ in range(repeats):
                tps, tokens, _finished = _ours_decode(ours, settings, decode_tokens)
                best_ours = max(best_ours, tps)
                bare_tps, chosen = _bare_decode(llm, prompt, tokens)
                best_bare = max(best_bare, bare_tps)
            greedy = settings.of(TemperatureParams).temperature == 0.0
            rows.append(
                BackendBenchRow(
                    f"decode tok/s, {label} ({len(tokens)} tokens, {threads} threads)",
                    best_ours,
                    best_bare,
                    "tok/s",
                    True,
                    0.95,
                    sum(a == b for a, b in zip(tokens, chosen, strict=True)) if greedy else None,
                )
            )
        text = PREFILL_TEXT * 40
        tokens = ours.runtime.tokenize(text, special=False)[:prefill_tokens]
        text = b"".join(ours.runtime.token_bytes(t) for t in tokens).decode("utf-8", "ignore")
        best_ours = best_bare = 0.0
        for _ in range(repeats):
            best_ours = max(best_ours, _ours_prefill(ours, text))
            best_bare = max(best_bare, _bare_prefill(llm, ours.prompt.raw_tokens(text)))
        rows.append(
            BackendBenchRow(
                f"prefill tok/s ({len(tokens)} tokens, batch {n_batch}, {threads} threads)",
                best_ours,
                best_bare,
                "tok/s",
                True,
                0.95,
            )
        )
        budget = path.stat().st_size / MB + kv_cache_bytes(ours) / MB + RSS_ALLOWANCE_MB
    finally:
        ours.close()
        llm.close()
    if measure_rss:
        ours_rss = peak_rss_mb("ours", path, n_ctx, threads, log)
        rows.append(
            BackendBenchRow(
                f"peak RSS vs model+KV({n_ctx})+{RSS_ALLOWANCE_MB:.0f} MB",
                ours_rss,
                budget,
                "MB",
                False,
                1.0,
            )
        )
        bare_rss = peak_rss_mb("llama-cpp-python", path, n_ctx, threads, log)
        rows.append(
            BackendBenchRow("peak RSS vs llama-cpp-python's", ours_rss, bare_rss, "MB", False, 1.1)
        )
    return rows


def format_rows(rows: list[BackendBenchRow]) -> str:
    """The rows as a text table."""
    lines = [f"{'metric':<58} {'ours':>9} {'reference':>10} {'ratio':>6}  target"]
    for row in rows:
        sign = ">=" if row.higher_is_better else "<="
        verdict = "ok" if row.passed else "MISSED"
        lines.append(
            f"{row.metric:<58} {row.ours:>9.1f} {row.reference:>10.1f} {row.ratio:>6.3f}"
            f"  {sign} {row.target:g} {verdict}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """`python -m backend.bench.generation [MODEL] [THREADS]`."""
    args = sys.argv[1:] if argv is None else argv
    model = Path(args[0]) if args and args[0] else None
    threads = int(args[1]) if len(args) > 1 else None
    print(format_rows(run_backend_bench(model, n_threads=threads)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
