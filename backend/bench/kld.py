"""`samplescope kld` against `llama-perplexity --kl-divergence`: tokens scored per
second, and peak memory against one chunk of logits.

The text is samplescope's own docstrings (always at hand, English prose), cut to a
few chunks of 512 tokens; the model is compared with itself (the speed does not
depend on what the two models are). Each side runs in a fresh process:

- ours, two ways: both models decoded (`--base`), and the test model against a base
  file (`--base-logits`); the process's peak resident memory (VmHWM) above what it
  held once both models were loaded, set against one chunk of logits (n_ctx ×
  vocabulary float32) per model;
- llama-perplexity (`$LLAMA_PERPLEXITY`, else on the PATH; left out when neither),
  its weights loaded as ours (repacked where the repacked kernels run here, else
  `-nr`: `backend.llama.repack_probe.one_sequence_weights`): its base run
  (`--kl-divergence-base`) plus its KLD run against the two models' time, its KLD run
  alone against ours from the file; wall time of each process, model load included
  on both sides.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from backend.llama.repack_probe import one_sequence_weights

PEER_ENV = "LLAMA_PERPLEXITY"
CTX = 512
#: Characters of the bench's text (about 3,500 tokens: 6 chunks of 512).
TEXT_CHARS = 16000

_CHILD = r"""
import json, sys, time
from pathlib import Path
mode, model, text_path, n_ctx, threads, log, base_file = sys.argv[1:8]
n_ctx, threads = int(n_ctx), int(threads)
started = time.perf_counter()
from backend.score.base_file import BaseFileReader
from backend.score.kld import (
    FileBase, ModelBase, bos_of, load_scorer, plan_from_file, plan_kld, run_kld, text_tokens,
)

def status(key):
    return int([l for l in open("/proc/self/status") if l.startswith(key)][0].split()[1])

test = load_scorer(Path(model), n_ctx, n_batch=512, n_threads=threads, log_path=log)
if mode == "models":
    base = load_scorer(Path(model), n_ctx, n_batch=512, n_threads=threads, log_path=log)
    tokens = text_tokens(test.runtime, Path(text_path).read_text(encoding="utf-8"))
    plan = plan_kld(tokens, n_ctx, bos_of(test.runtime))
    rows = ModelBase(base, plan)
else:
    reader = BaseFileReader(Path(base_file))
    plan = plan_from_file(reader.layout, bos_of(test.runtime))
    rows = FileBase(reader)
loaded = status("VmRSS:")
first_chunk = []

def on_chunk(index, totals):
    if index == 0:
        first_chunk.append(status("VmHWM:"))

scoring = time.perf_counter()
result = run_kld(test, rows, plan, on_chunk)
done = time.perf_counter()
print(json.dumps({
    "wall_s": done - started, "score_s": done - scoring, "n_scored": result.totals.count,
    "loaded_kb": loaded, "first_chunk_kb": first_chunk[0], "peak_kb": status("VmHWM:"),
    "n_chunk": plan.n_chunk,
}))
"""


@dataclass(frozen=True, slots=True)
class KldRun:
    """One side's run.

    Attributes:
        name: What ran.
        n_scored: Positions scored.
        wall_s: The process's wall time (model loads included).
        score_s: The scoring alone (None for llama-perplexity).
        peak_above_loaded_mb: Peak resident memory above the loaded models (ours):
            llama.cpp's compute and output buffers are touched at the first decode.
        peak_after_first_mb: How much the peak grew after the first chunk (ours): what
            scoring more of the text costs.
        peak_mb: The process's peak resident memory.
    """

    name: str
    n_scored: int
    wall_s: float
    score_s: float | None
    peak_above_loaded_mb: float | None
    peak_after_first_mb: float | None
    peak_mb: float

    @property
    def tokens_per_s(self) -> float:
        """Positions scored per second of wall time."""
        return self.n_scored / self.wall_s


@dataclass(frozen=True, slots=True)
class KldBench:
    """Both sides, and the size of one chunk of logits."""

    runs: tuple[KldRun, ...]
    chunk_logits_mb: float
    n_ctx: int
    peer: str | None


def bench_text(n_chars: int = TEXT_CHARS) -> str:
    """samplescope's own module docstrings, in module order, up to `n_chars`."""
    parts: list[str] = []
    for name in ("sampling", "backend"):
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            try:
                module = importlib.import_module(info.name)
            except Exception:
                continue
            if module.__doc__:
                parts.append(module.__doc__.strip())
    return "\n\n".join(parts)[:n_chars]


def peer_path() -> Path | None:
    """llama-perplexity: `$LLAMA_PERPLEXITY`, else on the PATH (None: neither)."""
    given = os.environ.get(PEER_ENV)
    found = given or shutil.which("llama-perplexity")
    return Path(found) if found and Path(found).is_file() else None


def _ours(
    mode: str, model: Path, text: Path, ctx: int, threads: int, log: Path, base_file: Path
) -> KldRun:
    args = [mode, str(model), str(text), str(ctx), str(threads), str(log), str(base_file)]
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=True
    )
    data = json.loads(out.stdout.strip().splitlines()[-1])
    name = "ours, both models" if mode == "models" else "ours, base from the file"
    return KldRun(
        name,
        int(data["n_scored"]),
        float(data["wall_s"]),
        float(data["score_s"]),
        (data["peak_kb"] - data["loaded_kb"]) / 1024,
        (data["peak_kb"] - data["first_chunk_kb"]) / 1024,
        data["peak_kb"] / 1024,
    )


def _peer(peer: Path, args: list[str]) -> tuple[float, float]:
    """Wall time and peak memory (MB) of one llama-perplexity run."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(peer), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"{peer} {' '.join(args)} exited with {process.returncode}")
    return wall, usage.ru_maxrss / 1024


def run_kld_bench(
    model_path: Path,
    *,
    n_threads: int = 1,
    ctx: int = CTX,
    n_chars: int = TEXT_CHARS,
    peer: Path | None = None,
) -> KldBench:
    """Run both sides on the same text, model and context (see the module docstring).

    Args:
        model_path: The model (compared with itself).
        n_threads: Threads of every side.
        ctx: Tokens a chunk.
        n_chars: Characters of the text.
        peer: llama-perplexity (None: `peer_path()`'s).
    """
    peer = peer or peer_path()
    with tempfile.TemporaryDirectory(prefix="samplescope-kld-bench-") as folder:
        work = Path(folder)
        text = work / "text.txt"
        text.write_text(bench_text(n_chars), encoding="utf-8")
        log = work / "llama.log"
        base_file = work / "base.kld"
        runs = [_ours("models", model_path, text, ctx, n_threads, log, base_file)]
        common = ["-m", str(model_path), "-c", str(ctx), "-t", str(n_threads)]
        if not one_sequence_weights(model_path, None).repack:
            common.append("-nr")  # ours loads them plain here: so does the peer
        if peer is not None:
            wall_base, peak_base = _peer(
                peer, [*common, "-f", str(text), "--kl-divergence-base", str(base_file)]
            )
            wall_kld, peak_kld = _peer(
                peer, [*common, "--kl-divergence-base", str(base_file), "--kl-divergence"]
            )
            n = runs[0].n_scored
            runs.append(
                KldRun("llama-perplexity, base + KLD runs", n, wall_base + wall_kld, None, None,
                       None, max(peak_base, peak_kld))
            )  # fmt: skip
            runs.append(
                KldRun("llama-perplexity, KLD run", n, wall_kld, None, None, None, peak_kld)
            )
            runs.insert(1, _ours("file", model_path, text, ctx, n_threads, log, base_file))
    chunk_mb = ctx * _vocab_of(model_path) * 4 / 2**20
    return KldBench(tuple(runs), chunk_mb, ctx, None if peer is None else str(peer))


def _vocab_of(model_path: Path) -> int:
    from backend.llama.gguf import read_gguf

    tokens = read_gguf(model_path).metadata.get("tokenizer.ggml.tokens")
    return len(tokens) if isinstance(tokens, tuple) else 0


def format_result(bench: KldBench) -> str:
    """The bench's table."""
    lines = [
        f"{'run':<36}{'scored':>7}{'wall s':>9}{'tok/s':>9}{'peak MB':>9}"
        f"{'+scoring':>10}{'+after 1st':>12}",
    ]
    for run in bench.runs:
        above = "" if run.peak_above_loaded_mb is None else f"{run.peak_above_loaded_mb:.0f}"
        later = "" if run.peak_after_first_mb is None else f"{run.peak_after_first_mb:.0f}"
        lines.append(
            f"{run.name:<36}{run.n_scored:>7}{run.wall_s:>9.2f}{run.tokens_per_s:>9.1f}"
            f"{run.peak_mb:>9.0f}{above:>10}{later:>12}"
        )
    by_name = {run.name: run for run in bench.runs}
    pairs = (
        ("ours, both models", "llama-perplexity, base + KLD runs"),
        ("ours, base from the file", "llama-perplexity, KLD run"),
    )
    for ours, theirs in pairs:
        if ours in by_name and theirs in by_name:
            ratio = by_name[ours].tokens_per_s / by_name[theirs].tokens_per_s
            lines.append(f"tok/s {ours} / {theirs}: {ratio:.2f}")
    if bench.peer is None:
        lines.append(f"llama-perplexity not found: set {PEER_ENV}=PATH for its figures")
    lines.append(
        f"one chunk of logits ({bench.n_ctx} x vocabulary, float32): {bench.chunk_logits_mb:.0f}"
        " MB. +scoring: the peak above the loaded models (llama.cpp's compute and output"
        " buffers are first touched there); +after 1st: its growth after the first chunk"
    )
    models = by_name.get("ours, both models")
    if models is not None and models.peak_after_first_mb is not None:
        share = models.peak_after_first_mb / bench.chunk_logits_mb
        lines.append(
            f"ours with two models: {share:.2f} of one chunk of logits more after the first chunk"
        )
    return "\n".join(lines)
