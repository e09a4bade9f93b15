"""Compare's columns in lockstep against the same columns one after the other.

`run_compare_bench(model_path)` generates four columns (greedy, and three seeded
settings) from one prompt, each to the same length, in lockstep (one `llama_decode`
a step for every live column, the prompt shared by `seq_cp`) and in turn (each
column a generation of its own, the prompt from the cache after the first), runs
alternating, best of `repeats`. It reports the wall time of each way, their ratio
(target: in turn / lockstep >= 1.15 on SmolLM2 at 2 threads), and each column's
tokens per second either way. Run: `samplescope bench --only compare`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage
from backend.session.compare import compare
from backend.session.llama_backend import LlamaBackend
from sampling.settings.record import SamplerSettings

PROMPT = [ChatMessage("user", "Write a long story about a lighthouse keeper and a storm.")]
COLUMNS = (
    SamplerSettings(temperature=0.0, seed=42),
    SamplerSettings(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=42),
    SamplerSettings(temperature=1.0, top_p=0.9, seed=42),
    SamplerSettings(temperature=0.7, min_p=0.1, seed=42),
)
TARGET = 1.15


@dataclass(frozen=True, slots=True)
class CompareBenchResult:
    """Lockstep against in turn.

    Attributes:
        lockstep_s: Best wall time of the four columns in lockstep.
        in_turn_s: Best wall time of the four columns one after the other.
        lockstep_tps: Each column's decode tokens/s in lockstep (its best run).
        in_turn_tps: Each column's decode tokens/s in turn (its best run).
        tokens: Each column's token count (every column runs to the same limit).
        identical: Whether each column's tokens were the same both ways (exact
            lockstep: each column in its own KV stream, weights not repacked).
    """

    lockstep_s: float
    in_turn_s: float
    lockstep_tps: tuple[float, ...]
    in_turn_tps: tuple[float, ...]
    tokens: tuple[int, ...]
    identical: bool = True

    @property
    def ratio(self) -> float:
        """How many times faster lockstep ran (in turn / lockstep)."""
        return self.in_turn_s / self.lockstep_s if self.lockstep_s > 0 else 0.0


def _once(
    backend: LlamaBackend,
    columns: tuple[SamplerSettings, ...],
    max_tokens: int,
    sequential: bool,
) -> tuple[float, list[FinishedEvent]]:
    backend.reset()
    ends: dict[int, FinishedEvent] = {}
    started = time.perf_counter()
    for item in compare(backend, PROMPT, columns, max_tokens=max_tokens, sequential=sequential):
        if isinstance(item.event, FinishedEvent):
            ends[item.column] = item.event
    elapsed = time.perf_counter() - started
    return elapsed, [ends[column] for column in range(len(columns))]


def run_compare_bench(
    model_path: Path, *, n_threads: int, max_tokens: int = 96, repeats: int = 3
) -> CompareBenchResult:
    """Measure (see the module doc). The end-of-generation token is banned, so every
    column runs to `max_tokens` both ways."""
    backend = LlamaBackend.load(model_path, n_ctx=2048, n_threads=n_threads)
    eos = backend.runtime.eos
    ban = ((eos, float("-inf")),) if eos >= 0 else ()
    columns = tuple(settings.with_changes(logit_bias=ban) for settings in COLUMNS)
    best = {False: float("inf"), True: float("inf")}
    tps: dict[bool, list[float]] = {False: [0.0] * len(columns), True: [0.0] * len(columns)}
    tokens: tuple[int, ...] = ()
    ids: dict[bool, list[tuple[int, ...]]] = {}
    try:
        _once(backend, columns, 8, False)  # warm up
        for _ in range(repeats):
            for sequential in (False, True):  # alternating: a disturbance hits both
                elapsed, ends = _once(backend, columns, max_tokens, sequential)
                best[sequential] = min(best[sequential], elapsed)
                for column, end in enumerate(ends):
                    tps[sequential][column] = max(tps[sequential][column], end.stats.decode_tps)
                tokens = tuple(len(end.token_ids) for end in ends)
                ids[sequential] = [end.token_ids for end in ends]
    finally:
        backend.close()
    return CompareBenchResult(
        best[False],
        best[True],
        tuple(tps[False]),
        tuple(tps[True]),
        tokens,
        ids.get(False) == ids.get(True),
    )


def format_result(result: CompareBenchResult) -> str:
    """The result as a markdown table."""
    lines = [
        "| way | wall s | " + " | ".join(f"col {i + 1} tok/s" for i in range(len(COLUMNS))) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
        f"| lockstep | {result.lockstep_s:.2f} | "
        + " | ".join(f"{t:.1f}" for t in result.lockstep_tps)
        + " |",
        f"| in turn | {result.in_turn_s:.2f} | "
        + " | ".join(f"{t:.1f}" for t in result.in_turn_tps)
        + " |",
        f"\nlockstep is {result.ratio:.2f}x faster (target >= {TARGET}); tokens per column:"
        f" {', '.join(map(str, result.tokens))}; every column's tokens the same both ways:"
        f" {'yes' if result.identical else 'NO'}",
    ]
    return "\n".join(lines)
