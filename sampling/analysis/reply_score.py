"""A reply's score from its recorded steps: how likely it was, before the samplers
and under the distribution they drew from, and how unsure the model was.

"Raw" is each step's distribution at temperature 1 before any filter: the softmax of
the logits after penalties, DRY and logit bias (the distribution a step's `entropy`
measures), which is the model's own distribution when those are off, as they are by
default. "Sampled" is the distribution the draw used (`Step.prob`). These figures come
from the decode, token by token; `samplescope score` of the same text scores it in one
batched pass, and llama.cpp's logits differ between the two.

A reply of a thinking model is scored whole and, apart, over each section's steps
(`ReplyScore.thinking` and `ReplyScore.answer`): the thinking's tokens are every step
recorded as thinking (several runs of it count as one section), the answer's the rest.
A reply with no thinking step has no section scores: its score is the whole reply's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sampling.analysis.token_scores import perplexity
from sampling.records import Step
from sampling.sections import Section

#: A token less probable than this under the raw distribution counts as unlikely.
LOW_PROBABILITY = 0.01


@dataclass(frozen=True, slots=True)
class ReplyScore:
    """How likely a reply was.

    Attributes:
        n_tokens: Tokens scored (every sampled token, an end-of-generation one included).
        logprob_raw: Sum of log p_raw(token), nats; None when a step does not record
            its token's raw probability.
        logprob_sampled: Sum of log p(token) in the distributions drawn from, nats.
        perplexity: exp(−logprob_raw / n_tokens); None with `logprob_raw`.
        mean_entropy: Mean entropy of the raw distributions, nats.
        low_prob_tokens: Tokens whose raw probability is below `low_prob_below`.
        low_prob_below: The threshold.
        grammar_removed: The probability mass the grammar removed, summed over the
            steps; None when no step ran a grammar.
        grammar_kept_logprob: Sum of log(1 - mass removed), nats: how likely the
            model, left alone, was to stay inside the grammar along this reply; None
            without a grammar.
        forced_tokens: Steps where a unit (the grammar) left exactly one token.
        thinking: The same figures over the thinking's steps alone; None when no step
            is thinking.
        answer: The same figures over the answer's steps alone; None when no step is
            thinking (the whole score is the answer's) or none is the answer (the
            reply ended in its thinking).
    """

    n_tokens: int
    logprob_raw: float | None
    logprob_sampled: float
    perplexity: float | None
    mean_entropy: float
    low_prob_tokens: int
    low_prob_below: float
    grammar_removed: float | None = None
    grammar_kept_logprob: float | None = None
    forced_tokens: int = 0
    thinking: ReplyScore | None = None
    answer: ReplyScore | None = None

    @property
    def logprob_per_token(self) -> float | None:
        """The raw log-probability per token, nats (None with `logprob_raw`)."""
        return None if self.logprob_raw is None else self.logprob_raw / self.n_tokens

    @property
    def sections(self) -> tuple[tuple[Section, ReplyScore], ...]:
        """The sections' scores that exist, the thinking first (none for a reply that
        does not think)."""
        pairs = ((Section.THINKING, self.thinking), (Section.ANSWER, self.answer))
        return tuple((kind, score) for kind, score in pairs if score is not None)


def _log(probability: float) -> float:
    return math.log(probability) if probability > 0.0 else -math.inf


def reply_score(
    steps: Sequence[Step], low_prob_below: float = LOW_PROBABILITY
) -> ReplyScore | None:
    """The score of the reply these steps sampled, with each section's apart when a
    step is thinking; None for a reply of no token."""
    whole = _score(steps, low_prob_below)
    if whole is None or all(step.section is not Section.THINKING for step in steps):
        return whole
    return replace(
        whole,
        thinking=_score([s for s in steps if s.section is Section.THINKING], low_prob_below),
        answer=_score([s for s in steps if s.section is not Section.THINKING], low_prob_below),
    )


def _score(steps: Sequence[Step], low_prob_below: float) -> ReplyScore | None:
    """The figures of these steps, taken as one run (None for no step)."""
    if not steps:
        return None
    raw = [step.prob_unfiltered for step in steps]
    known = [p for p in raw if p is not None]
    figures = (step.figure("grammar", "removed") for step in steps)
    removed = [float(r) for r in figures if isinstance(r, int | float)]
    logprob_raw = sum(_log(p) for p in known) if len(known) == len(raw) else None
    return ReplyScore(
        n_tokens=len(steps),
        logprob_raw=logprob_raw,
        logprob_sampled=sum(_log(step.prob) for step in steps),
        perplexity=None if logprob_raw is None else perplexity(logprob_raw, len(steps)),
        mean_entropy=sum(step.entropy for step in steps) / len(steps),
        low_prob_tokens=sum(1 for p in known if p < low_prob_below),
        low_prob_below=low_prob_below,
        grammar_removed=sum(removed) if removed else None,
        grammar_kept_logprob=sum(_log(1.0 - r) for r in removed) if removed else None,
        forced_tokens=sum(1 for step in steps if step.forced),
    )
