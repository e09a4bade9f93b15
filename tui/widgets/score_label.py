"""A reply's score in a few characters: its raw log-probability and perplexity."""

from __future__ import annotations

import math

from sampling.reply_score import ReplyScore


def score_label(score: ReplyScore | None) -> str:
    """E.g. "logp −42.17 · ppl 3.08": the raw log-probability (nats) and perplexity;
    "" for a reply of no token or one whose raw figures are not recorded."""
    if score is None or score.logprob_raw is None or score.perplexity is None:
        return ""
    if not math.isfinite(score.logprob_raw):
        return "logp −∞"
    logprob = f"{score.logprob_raw:.2f}".replace("-", "−")
    return f"logp {logprob} · ppl {score.perplexity:.{_digits(score.perplexity)}f}"


def _digits(value: float) -> int:
    """Decimals for a perplexity: fewer as it grows, so the label stays short."""
    return 2 if value < 100 else 1 if value < 1000 else 0
