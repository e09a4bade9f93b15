"""Where two runs of one prompt fork, and whether it was a near-tie or a disagreement.

Two replies to the same prompt (two settings, two quantizations, batched and alone, a
reply and its replay under another build) share tokens up to a first difference. At
that token each run's own step says how sure it was: the probability margin between
its two most probable candidates (raw: temperature 1, before any filter) and how far
apart it put the two tokens the runs chose (the logit of the first run's token minus
the second's). When every run's margin is under a threshold the fork is a near-tie
(rounding, batching or a draw could flip it); otherwise the runs disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from sampling.records import Step

#: The margin under which a fork is a near-tie (a probability, top-1 minus top-2).
NEAR_TIE_MARGIN = 0.05

Verdict = Literal["identical", "ended", "near-tie", "disagreement", "unknown"]


@dataclass(frozen=True, slots=True)
class LogitGap:
    """logit(first run's token) − logit(second run's token) in one run's step.

    Attributes:
        value: The difference, or the bound when one token is below the step's table.
        bound: "=" exact, ">=" at least (the second token is below the table), "<="
            at most (the first token is below the table).
    """

    value: float
    bound: Literal["=", ">=", "<="]

    def __str__(self) -> str:
        prefix = "" if self.bound == "=" else f"{'≥' if self.bound == '>=' else '≤'} "
        return f"{prefix}{self.value:+.3f}"


@dataclass(frozen=True, slots=True)
class RunAtFork:
    """One run at the fork.

    Attributes:
        token_id: The token it chose there (None: it had ended).
        top_ids: Its two most probable tokens there (raw), most probable first.
        top_probs: Their raw probabilities.
        margin: top_probs[0] − top_probs[1].
        chosen_prob: Its chosen token's raw probability (None when not recorded).
        logit_gap: How far apart it put the two runs' tokens (None: no step recorded).
    """

    token_id: int | None
    top_ids: tuple[int, ...]
    top_probs: tuple[float, ...]
    margin: float | None
    chosen_prob: float | None
    logit_gap: LogitGap | None


@dataclass(frozen=True, slots=True)
class Fork:
    """Where two runs part.

    Attributes:
        index: The first token index where they differ (None: identical).
        runs: Each run at that index (empty when identical).
        verdict: "identical", "ended" (one run stopped where the other went on),
            "near-tie", "disagreement", or "unknown" (a step was not recorded).
        threshold: The margin under which it is a near-tie.
    """

    index: int | None
    runs: tuple[RunAtFork, ...]
    verdict: Verdict
    threshold: float


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first index where two token lists differ (one ending counts), or None."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return None if len(a) == len(b) else min(len(a), len(b))


def logit_of(step: Step, token: int) -> tuple[float, bool]:
    """A token's logit in a step: (value, exact); a token below the step's table gets
    the table's lowest logit as an upper bound (exact False)."""
    table = step.table
    rows = np.flatnonzero(table.token_ids == token)
    if rows.size:
        return float(table.logits[rows[0]]), True
    if token == step.token_id and step.logit is not None:
        return float(step.logit), True
    return float(table.logits[-1]) if table.logits.size else float("nan"), False


def logit_gap(step: Step, first: int, second: int) -> LogitGap:
    """logit(first) − logit(second) in `step`, or a bound on it."""
    a, a_exact = logit_of(step, first)
    b, b_exact = logit_of(step, second)
    if a_exact and b_exact:
        return LogitGap(a - b, "=")
    return LogitGap(a - b, ">=" if a_exact else "<=")


def run_at(step: Step | None, token: int | None, tokens: tuple[int, int] | None) -> RunAtFork:
    """One run's figures at the fork from its step there (None: not recorded)."""
    if step is None:
        return RunAtFork(token, (), (), None, None, None)
    table = step.table
    top = min(2, int(table.token_ids.shape[0]))
    top_ids = tuple(int(t) for t in table.token_ids[:top])
    top_probs = tuple(float(p) for p in table.prob_before[:top])
    margin = top_probs[0] - top_probs[1] if top == 2 else None
    gap = None if tokens is None else logit_gap(step, *tokens)
    return RunAtFork(token, top_ids, top_probs, margin, step.prob_unfiltered, gap)


def find_fork(
    runs: Sequence[Sequence[int]],
    steps: Sequence[Step | None],
    threshold: float = NEAR_TIE_MARGIN,
) -> Fork:
    """Where two runs part and how sure each was there.

    Args:
        runs: The two runs' token ids.
        steps: Each run's step at the first difference (None: not recorded, or the
            run had ended there).
        threshold: The margin under which the fork is a near-tie.
    """
    index = first_difference(runs[0], runs[1])
    if index is None:
        return Fork(None, (), "identical", threshold)
    chosen = tuple(run[index] if index < len(run) else None for run in runs)
    return fork_at(index, (chosen[0], chosen[1]), (steps[0], steps[1]), threshold)


def fork_at(
    index: int,
    chosen: tuple[int | None, int | None],
    steps: tuple[Step | None, Step | None],
    threshold: float = NEAR_TIE_MARGIN,
) -> Fork:
    """The fork at a known first difference.

    Args:
        index: The first token index where the runs differ.
        chosen: The token each run took there (None: it had ended).
        steps: Each run's step there (None: not recorded, or the run had ended).
        threshold: The margin under which the fork is a near-tie.
    """
    first, second = chosen
    pair = (first, second) if first is not None and second is not None else None
    at = tuple(run_at(step, token, pair) for step, token in zip(steps, chosen, strict=True))
    verdict: Verdict
    if pair is None:
        verdict = "ended"
    elif any(run.margin is None for run in at):
        verdict = "unknown"
    else:
        near = all(run.margin is not None and run.margin < threshold for run in at)
        verdict = "near-tie" if near else "disagreement"
    return Fork(index, at, verdict, threshold)


def fork_summary(fork: Fork) -> str:
    """The fork in a few words, parts joined by " · ": the verdict, each run's margin,
    each run's logit gap."""
    if fork.index is None:
        return "identical"
    if fork.verdict in ("ended", "unknown"):
        return fork.verdict
    margins = "/".join(f"{run.margin:.2f}" for run in fork.runs if run.margin is not None)
    gaps = "/".join(str(run.logit_gap) for run in fork.runs if run.logit_gap is not None)
    return f"{fork.verdict} · margin {margins} · Δlogit {gaps}"
