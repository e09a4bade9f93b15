"""The loop watch's cost a token, next to the sampler's, on one real reply.

A greedy reply of the default model to a poem prompt loops (a block of lines
repeated); its tokens are then fed through a `sampling.analysis.loops.LoopWatch` again and
again, timed, and the time a token is set against the sampler's own time a token in
that reply (`GenerationStats.sampler_us`, the record included).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from backend.session.loop_watch import LoopGuard
from sampling.analysis.loops import Loop, LoopRule, LoopWatch
from sampling.built_in import DEFAULT_CHAT_SETTINGS

PROMPT = "Write a poem about the sea."
TOKENS = 200


@dataclass(frozen=True, slots=True)
class LoopBench:
    """Microseconds a token: the loop watch's and the sampler's, on one reply.

    Attributes:
        tokens: The reply's length.
        loop: Its loop (None: it did not loop).
        watch_us: The watch's median time a token (`LoopRule()`: periods up to 128).
        sampler_us: The sampler's mean time a token in the reply.
    """

    tokens: int
    loop: Loop | None
    watch_us: float
    sampler_us: float

    @property
    def share(self) -> float:
        """watch / sampler."""
        return self.watch_us / self.sampler_us


def run_loop_bench(model_path: Path, *, n_threads: int = 1, repeats: int = 7) -> LoopBench:
    """Generate the reply (greedy, loops marked) and time the watch over its tokens."""
    backend = LlamaBackend.load(model_path, n_ctx=2048, n_threads=n_threads)
    try:
        live = LiveSettings(DEFAULT_CHAT_SETTINGS.with_changes(temperature=0.0))
        events = backend.generate(
            [ChatMessage("user", PROMPT)], live, max_tokens=TOKENS, loops=LoopGuard("mark")
        )
        finished = [e for e in events if isinstance(e, FinishedEvent)][-1]
    finally:
        backend.close()
    tokens = list(finished.token_ids)
    runs: list[float] = []
    for _ in range(repeats):
        watch = LoopWatch(LoopRule())
        started = time.perf_counter()
        for token in tokens:
            watch.push(token)
        runs.append((time.perf_counter() - started) / len(tokens) * 1e6)
    stats = finished.stats
    sampler_us = stats.sampler_us / max(stats.decode_tokens, 1)
    return LoopBench(len(tokens), finished.loop, statistics.median(runs), sampler_us)


def format_result(result: LoopBench) -> str:
    """The bench's lines."""
    loop = result.loop
    looped = "no loop" if loop is None else f"loop {loop.period}×{loop.count} from {loop.start}"
    return (
        f"reply: {result.tokens} tokens, {looped}\n"
        f"loop watch {result.watch_us:.1f} µs/token · sampler {result.sampler_us:.1f} µs/token"
        f" · watch/sampler {result.share:.3f}"
    )
