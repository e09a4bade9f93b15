"""Guidance's cost: a guided reply against the same reply unguided.

`run_guidance_bench(model_path)` generates one reply with a negative prompt beside it
(two sequences, each in its own KV stream, one `llama_decode` a step for both) and the
same reply without guidance, each to the same length (the end-of-generation token
banned), alternating, best of `repeats`. It reports each way's decode tokens/s and
their ratio: two sequences in one batch should cost well under twice one. Beside it,
the floor: llama.cpp's own `llama_decode` of a batch of two tokens (one a sequence,
each in its own stream) against a batch of one, on the same weights, median of
`FLOOR_STEPS` steps each; guided decoding cannot cost less than that ratio. Run:
`samplescope bench --only guidance`.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import llama_cpp

from backend.bench.paired import paired_speeds
from backend.chat.protocol import ChatMessage
from backend.llama.context import LocalContext, load_model
from backend.session.llama_backend import LlamaBackend
from backend.session.model import BatchEntry
from sampling.settings.record import SamplerSettings

PROMPT = [ChatMessage("user", "Write a long story about a lighthouse keeper and a storm.")]
NEGATIVE = "Write a long story about a sunny day at the beach."
PLAIN = SamplerSettings(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=42)
GUIDED = PLAIN.with_changes(guidance_scale=1.5, negative_prompt=NEGATIVE)

#: How many decode steps the floor's median is taken over, each batch shape.
FLOOR_STEPS = 32


@dataclass(frozen=True, slots=True)
class GuidanceBenchResult:
    """A guided reply against a plain one.

    Attributes:
        plain_tps: Best decode tokens/s of the plain reply.
        guided_tps: Best decode tokens/s of the guided reply.
        tokens: The replies' length in tokens.
        one_token_ms: llama.cpp's median decode of a batch of one token.
        two_tokens_ms: Its median decode of two tokens, one in each of two sequences.
    """

    plain_tps: float
    guided_tps: float
    tokens: int
    one_token_ms: float
    two_tokens_ms: float

    @property
    def floor(self) -> float:
        """How many times a one-token batch llama.cpp's two-token batch costs."""
        return self.two_tokens_ms / self.one_token_ms if self.one_token_ms > 0 else 0.0

    @property
    def cost(self) -> float:
        """How many times longer a guided token takes (plain tok/s / guided tok/s)."""
        return self.plain_tps / self.guided_tps if self.guided_tps > 0 else 0.0


def run_guidance_bench(
    model_path: Path, *, n_threads: int, max_tokens: int = 96, repeats: int = 3
) -> GuidanceBenchResult:
    """Measure (see the module doc)."""
    backend = LlamaBackend.load(model_path, n_ctx=2048, n_threads=n_threads)
    try:
        speeds = paired_speeds(
            backend, PROMPT, PLAIN, GUIDED, max_tokens=max_tokens, repeats=repeats
        )
    finally:
        backend.close()
    one_token_ms, two_tokens_ms = decode_floor(model_path, n_threads=n_threads)
    return GuidanceBenchResult(
        speeds.peer_tps, speeds.ours_tps, speeds.tokens, one_token_ms, two_tokens_ms
    )


def decode_floor(
    model_path: Path, *, n_threads: int, steps: int = FLOOR_STEPS
) -> tuple[float, float]:
    """llama.cpp's median milliseconds to decode a batch of one token and a batch of
    two (one token in each of two sequences, each in its own stream), alternating, on
    a context like guidance's."""
    model = load_model(model_path)
    context = LocalContext(model, 2048, 64, n_threads, 2)
    try:
        one: list[float] = []
        two: list[float] = []
        token, first_pos, second_pos = 1, 0, 0
        for _ in range(steps):
            for batch, times in (((0,), one), ((0, 1), two)):
                entries = [
                    BatchEntry(token, first_pos if seq == 0 else second_pos, seq) for seq in batch
                ]
                started = time.perf_counter()
                if context.decode_batch(entries) != 0:
                    raise RuntimeError("llama_decode failed")
                times.append(time.perf_counter() - started)
                token = int(context.logits(-1).argmax())
                first_pos += 1
                second_pos += len(batch) - 1
        return 1000 * statistics.median(one), 1000 * statistics.median(two)
    finally:
        context.close()
        llama_cpp.llama_model_free(model)


def format_result(result: GuidanceBenchResult) -> str:
    """The result as a markdown table."""
    return "\n".join(
        [
            "| reply | decode tok/s | tokens |",
            "|---|---|---|",
            f"| plain | {result.plain_tps:.1f} | {result.tokens} |",
            f"| guided (negative prompt beside it) | {result.guided_tps:.1f} | {result.tokens} |",
            f"| guided costs | {result.cost:.2f}x a plain token | |",
            f"| llama.cpp's floor: two tokens in one batch | {result.floor:.2f}x one token"
            f" ({result.two_tokens_ms:.1f} vs {result.one_token_ms:.1f} ms) | |",
        ]
    )
