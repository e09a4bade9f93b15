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

from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
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


def _once(backend: LlamaBackend, settings: SamplerSettings, max_tokens: int) -> FinishedEvent:
    backend.reset()
    events = backend.generate(PROMPT, LiveSettings(settings), max_tokens=max_tokens, raw=True)
    finished = [event for event in events if isinstance(event, FinishedEvent)][-1]
    if finished.error:
        raise RuntimeError(finished.error)
    return finished


def run_thinking_bench(
    model_path: Path, *, n_threads: int, max_tokens: int = 256, repeats: int = 3
) -> ThinkingBenchResult:
    """Measure (see the module doc)."""
    backend = LlamaBackend.load(model_path, n_ctx=2048, n_threads=n_threads)
    eos = backend.runtime.eos
    ban = ((eos, float("-inf")),) if eos >= 0 else ()
    plain, thinking = PLAIN.with_changes(logit_bias=ban), THINKING.with_changes(logit_bias=ban)
    best = {False: 0.0, True: 0.0}
    tokens = 0
    try:
        _once(backend, thinking, 4)  # warm up
        for _ in range(repeats):
            for watched in (False, True):  # alternating: a disturbance hits both
                finished = _once(backend, thinking if watched else plain, max_tokens)
                best[watched] = max(best[watched], finished.stats.decode_tps)
                tokens = len(finished.token_ids)
    finally:
        backend.close()
    return ThinkingBenchResult(best[False], best[True], tokens)


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
