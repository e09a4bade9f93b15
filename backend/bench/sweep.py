"""A sweep in lockstep against the same samples in turn.

`run_sweep_bench(model_path)` runs a 4-setting × 4-sample grid on one prompt (16
samples, each to the same length) in lockstep, as `sweep` does by default (one batch of
16 sequences), and in turn (each sample a generation of its own, the prompt from the
memory after the first), alternating, best of `repeats`. It reports the wall time of
each way and their ratio (target: in turn / lockstep >= 1.3 on SmolLM2). Run:
`samplescope bench --only sweep`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from backend.session.llama_backend import LlamaBackend
from backend.session.sweep import (
    DEFAULT_PARALLEL,
    SweepPlan,
    SweepSample,
    SweepSetting,
    run_sweep,
)
from sampling.settings.record import SamplerSettings

PROMPT = "Write a long story about a lighthouse keeper and a storm."
SETTINGS = (
    SamplerSettings(temperature=0.7, min_p=0.1),
    SamplerSettings(temperature=1.0, top_p=0.9),
    SamplerSettings(temperature=1.5, min_p=0.1),
    SamplerSettings(temperature=1.0, top_n_sigma=1.0),
)
SAMPLES = 4
TARGET = 1.3


@dataclass(frozen=True, slots=True)
class SweepBenchResult:
    """Lockstep against in turn.

    Attributes:
        lockstep_s: Best wall time of the sweep in lockstep batches.
        in_turn_s: Best wall time of the same samples one after the other.
        samples: How many samples each way ran.
        tokens: Tokens each sample took (every sample runs to the same limit).
        batch: Samples a lockstep batch holds (the model's n_seq_max).
    """

    lockstep_s: float
    in_turn_s: float
    samples: int
    tokens: int
    batch: int

    @property
    def ratio(self) -> float:
        """How many times faster lockstep ran (in turn / lockstep)."""
        return self.in_turn_s / self.lockstep_s if self.lockstep_s > 0 else 0.0


def _plan(max_tokens: int, ban: tuple[tuple[int, float], ...]) -> SweepPlan:
    settings = tuple(
        SweepSetting(str(index), settings.with_changes(logit_bias=ban))
        for index, settings in enumerate(SETTINGS)
    )
    return SweepPlan((PROMPT,), settings, SAMPLES, seed=42, max_tokens=max_tokens)


def _once(backend: LlamaBackend, plan: SweepPlan, in_turn: bool) -> tuple[float, list[int]]:
    backend.reset()
    started = time.perf_counter()
    lengths = [
        len(event.finished.token_ids)
        for event in run_sweep(backend, plan, in_turn=in_turn)
        if isinstance(event, SweepSample)
    ]
    return time.perf_counter() - started, lengths


def run_sweep_bench(
    model_path: Path, *, n_threads: int, max_tokens: int = 48, repeats: int = 3
) -> SweepBenchResult:
    """Measure (see the module doc). The end-of-generation token is banned, so every
    sample runs to `max_tokens` both ways."""
    batch = min(DEFAULT_PARALLEL, len(SETTINGS) * SAMPLES)
    backend = LlamaBackend.load(model_path, n_ctx=2048, n_threads=n_threads, n_seq_max=batch)
    eos = backend.runtime.eos
    ban = ((eos, float("-inf")),) if eos >= 0 else ()
    plan = _plan(max_tokens, ban)
    best = {False: float("inf"), True: float("inf")}
    lengths: list[int] = []
    try:
        _once(backend, _plan(4, ban), False)  # warm up
        for _ in range(repeats):
            for in_turn in (False, True):  # alternating: a disturbance hits both
                elapsed, lengths = _once(backend, plan, in_turn)
                best[in_turn] = min(best[in_turn], elapsed)
        batch = backend.model.n_seq_max
    finally:
        backend.close()
    tokens = max(lengths, default=0)
    return SweepBenchResult(best[False], best[True], len(lengths), tokens, batch)


def format_result(result: SweepBenchResult) -> str:
    """The result as a markdown table."""
    return "\n".join(
        [
            "| way | wall s | samples × tokens |",
            "|---|---|---|",
            f"| lockstep (batches of {result.batch}) | {result.lockstep_s:.2f} |"
            f" {result.samples} × {result.tokens} |",
            f"| in turn | {result.in_turn_s:.2f} | {result.samples} × {result.tokens} |",
            f"\nlockstep is {result.ratio:.2f}x faster (target >= {TARGET})",
        ]
    )
