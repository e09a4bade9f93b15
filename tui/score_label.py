"""A reply's score in a few characters: its raw log-probability and perplexity."""

from __future__ import annotations

import math

from sampling.analysis.reply_score import ReplyScore


def score_label(score: ReplyScore | None) -> str:
    """E.g. "logp −42.17 · ppl 3.08": the raw log-probability (nats) and perplexity;
    "" for a reply of no token or one whose raw figures are not recorded."""
    if score is None or score.logprob_raw is None:
        return ""
    return logprob_label(score.logprob_raw, score.n_tokens)


def logprob_label(logprob: float, n_tokens: int) -> str:
    """The label of `n_tokens` tokens whose raw log-probabilities sum to `logprob`."""
    if not math.isfinite(logprob):
        return "logp −∞"
    perplexity = math.exp(-logprob / max(n_tokens, 1))
    text = f"{logprob:.2f}".replace("-", "−")
    return f"logp {text} · ppl {perplexity:.{_digits(perplexity)}f}"


def _digits(value: float) -> int:
    """Decimals for a perplexity: fewer as it grows, so the label stays short."""
    return 2 if value < 100 else 1 if value < 1000 else 0
