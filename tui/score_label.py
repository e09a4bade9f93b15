"""A reply's score in a few characters: its raw log-probability and perplexity, and each
section's perplexity when the reply thinks."""

from __future__ import annotations

import math

from sampling.analysis.reply_score import ReplyScore


def score_label(score: ReplyScore | None) -> str:
    """E.g. "logp −42.17 · ppl 3.08": the raw log-probability (nats) and perplexity;
    "" for a reply of no token or one whose raw figures are not recorded. A reply that
    thinks adds each section's perplexity: "… · thinking ppl 2.10 · answer ppl 4.31"."""
    if score is None or score.logprob_raw is None:
        return ""
    parts = [logprob_label(score.logprob_raw, score.n_tokens)]
    for kind, section in score.sections:
        if section.logprob_raw is not None:
            parts.append(f"{kind} {perplexity_label(section.logprob_raw, section.n_tokens)}")
    return " · ".join(parts)


def section_score_line(score: ReplyScore | None) -> str:
    """E.g. "thinking: 120 tokens, logp/token −0.74, ppl 2.10; answer: 30 tokens, …": each
    section's length and figures (`generate -v`); "" for a reply that does not think."""
    parts = []
    for kind, section in score.sections if score is not None else ():
        logprob = section.logprob_raw
        if logprob is None:
            parts.append(f"{kind}: {_tokens(section.n_tokens)}")
            continue
        per_token = logprob / section.n_tokens
        text = f"{per_token:.3f}".replace("-", "−") if math.isfinite(per_token) else "−∞"
        parts.append(
            f"{kind}: {_tokens(section.n_tokens)}, logp/token {text},"
            f" {perplexity_label(logprob, section.n_tokens)}"
        )
    return "; ".join(parts)


def logprob_label(logprob: float, n_tokens: int) -> str:
    """The label of `n_tokens` tokens whose raw log-probabilities sum to `logprob`."""
    if not math.isfinite(logprob):
        return "logp −∞"
    text = f"{logprob:.2f}".replace("-", "−")
    return f"logp {text} · {perplexity_label(logprob, n_tokens)}"


def perplexity_label(logprob: float, n_tokens: int) -> str:
    """E.g. "ppl 3.08": the perplexity of `n_tokens` tokens whose raw log-probabilities
    sum to `logprob` ("ppl ∞" when one of them was impossible)."""
    if not math.isfinite(logprob):
        return "ppl ∞"
    perplexity = math.exp(-logprob / max(n_tokens, 1))
    return f"ppl {perplexity:.{_digits(perplexity)}f}"


def _tokens(count: int) -> str:
    return f"{count} token{'' if count == 1 else 's'}"


def _digits(value: float) -> int:
    """Decimals for a perplexity: fewer as it grows, so the label stays short."""
    return 2 if value < 100 else 1 if value < 1000 else 0
