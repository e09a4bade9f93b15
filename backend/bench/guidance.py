"""Guidance's cost: a guided reply against the same reply unguided.

`run_guidance_bench(model_path)` generates one reply with a negative prompt beside it
(two sequences, each in its own KV stream, one `llama_decode` a step for both) and the
same reply without guidance, each to the same length (the end-of-generation token
banned), alternating, best of `repeats`. It reports each way's decode tokens/s and
their ratio: two sequences in one batch should cost well under twice one. Run:
`samplescope bench --only guidance`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backend.bench.paired import paired_speeds
from backend.chat.protocol import ChatMessage
from backend.session.llama_backend import LlamaBackend
from sampling.settings.record import SamplerSettings

PROMPT = [ChatMessage("user", "Write a long story about a lighthouse keeper and a storm.")]
NEGATIVE = "Write a long story about a sunny day at the beach."
PLAIN = SamplerSettings(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=42)
GUIDED = PLAIN.with_changes(guidance_scale=1.5, negative_prompt=NEGATIVE)


@dataclass(frozen=True, slots=True)
class GuidanceBenchResult:
    """A guided reply against a plain one.

    Attributes:
        plain_tps: Best decode tokens/s of the plain reply.
        guided_tps: Best decode tokens/s of the guided reply.
        tokens: The replies' length in tokens.
    """

    plain_tps: float
    guided_tps: float
    tokens: int

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
    return GuidanceBenchResult(speeds.peer_tps, speeds.ours_tps, speeds.tokens)


def format_result(result: GuidanceBenchResult) -> str:
    """The result as a markdown table."""
    return "\n".join(
        [
            "| reply | decode tok/s | tokens |",
            "|---|---|---|",
            f"| plain | {result.plain_tps:.1f} | {result.tokens} |",
            f"| guided (negative prompt beside it) | {result.guided_tps:.1f} | {result.tokens} |",
            f"| guided costs | {result.cost:.2f}x a plain token | |",
        ]
    )
