"""The thinking's cost: a reply that thinks under a reasoning budget against plain.

`run_thinking_bench(model_path)` continues a raw prompt that opens the thinking
(`<think>` at its end) twice, to the same length (the end-of-generation token
banned): once with nothing watching the thinking, once with the thinking's tags and
a budget the reply does not reach (2,000 tokens), so the budget counts every token and the reply's
sections are tracked at every step. Alternating, best of `repeats`; it reports each
way's decode tokens/s and their ratio (the issue's target: the thinking costs at most
2% of the tokens/s). Run: `samplescope bench --only thinking`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backend.bench.paired import paired_speeds
from backend.chat.protocol import ChatMessage
from backend.session.llama_backend import LlamaBackend
from sampling.settings.record import SamplerSettings

PROMPT = [ChatMessage("user", "Question: Why is the sky blue? Think it through.\n<think>\n")]
PLAIN = SamplerSettings(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=42)
THINKING = PLAIN.with_changes(reasoning_budget=2000, thinking_tags=("<think>", "</think>"))


@dataclass(frozen=True, slots=True)
class ThinkingBenchResult:
    """A reply watched as thinking against the same reply plain.

    Attributes:
        plain_tps: Best decode tokens/s with nothing watching the thinking.
        thinking_tps: Best decode tokens/s with the budget counting and the sections
            tracked.
        tokens: The replies' length in tokens.
    """

    plain_tps: float
    thinking_tps: float
    tokens: int

    @property
    def cost(self) -> float:
        """The share of tokens/s the thinking's watch costs (0.01 is 1%)."""
        return 1 - self.thinking_tps / self.plain_tps if self.plain_tps > 0 else 0.0


def run_thinking_bench(
    model_path: Path, *, n_threads: int, max_tokens: int = 256, repeats: int = 3
) -> ThinkingBenchResult:
    """Measure (see the module doc)."""
    backend = LlamaBackend.load(model_path, n_ctx=2048, n_threads=n_threads)
    try:
        speeds = paired_speeds(
            backend, PROMPT, PLAIN, THINKING, max_tokens=max_tokens, repeats=repeats, raw=True
        )
    finally:
        backend.close()
    return ThinkingBenchResult(speeds.peer_tps, speeds.ours_tps, speeds.tokens)


def format_result(result: ThinkingBenchResult) -> str:
    """The result as a markdown table."""
    return "\n".join(
        [
            "| reply | decode tok/s | tokens |",
            "|---|---|---|",
            f"| plain | {result.plain_tps:.1f} | {result.tokens} |",
            f"| thinking (budget counting, sections tracked) | {result.thinking_tps:.1f}"
            f" | {result.tokens} |",
            f"| the thinking's watch costs | {100 * result.cost:.1f}% of tokens/s | |",
        ]
    )
