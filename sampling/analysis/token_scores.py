"""How a model's raw distribution judged the tokens that came: log-probability, rank,
entropy and the most probable alternatives, for many positions at once.

The raw distribution is softmax(logits) at temperature 1 with no filter, which is
what a log-probability and a perplexity mean. Rows are taken in float64 a few at a
time, so memory stays a few rows of the vocabulary whatever the number of positions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sampling.errors import LogitsError, SamplescopeError

#: Rows converted to float64 at once (a bound on scratch memory, not on the result).
ROWS_AT_ONCE = 16


@dataclass(frozen=True, slots=True)
class RowScores:
    """Scores of n positions, one entry per row.

    Attributes:
        logprob: log p(target) under softmax(logits), nats.
        rank: 1 + how many tokens come before the target in descending probability
            (ties: lower id first), as the samplers order candidates.
        entropy: Entropy of the row's distribution, nats.
        top_ids: The `top_n` most probable token ids of each row, most probable first.
        top_logprobs: Their log-probabilities.
    """

    logprob: npt.NDArray[np.float64]
    rank: npt.NDArray[np.int64]
    entropy: npt.NDArray[np.float64]
    top_ids: npt.NDArray[np.int64]
    top_logprobs: npt.NDArray[np.float64]


def score_rows(
    logits: npt.NDArray[np.floating], targets: npt.NDArray[np.integer] | list[int], top_n: int
) -> RowScores:
    """Score each row's target token under the row's raw distribution.

    Args:
        logits: (n, vocabulary) logits; row i is the distribution `targets[i]` came from.
        targets: n token ids.
        top_n: How many alternatives to keep per row (at most the vocabulary).

    Raises:
        LogitsError: The shapes disagree, a target is outside the vocabulary, or
            a row has no finite logit.
    """
    if logits.ndim != 2:
        raise LogitsError(
            f"logits to score must be 2-D (positions × vocabulary), got {logits.ndim}-D"
        )
    n, n_vocab = logits.shape
    target_ids = np.asarray(targets, dtype=np.int64)
    if target_ids.shape != (n,):
        raise LogitsError(f"{target_ids.size} target tokens for {n} rows of logits")
    if n and (target_ids.min() < 0 or target_ids.max() >= n_vocab):
        raise LogitsError(f"a target token is outside the vocabulary of {n_vocab}")
    keep = max(0, min(top_n, n_vocab))
    logprob = np.empty(n, dtype=np.float64)
    rank = np.empty(n, dtype=np.int64)
    entropy = np.empty(n, dtype=np.float64)
    top_ids = np.empty((n, keep), dtype=np.int64)
    top_logprobs = np.empty((n, keep), dtype=np.float64)
    for begin in range(0, n, ROWS_AT_ONCE):
        end = min(begin + ROWS_AT_ONCE, n)
        block = logits[begin:end].astype(np.float64)
        maxima = block.max(axis=1, keepdims=True)
        if not np.all(np.isfinite(maxima)):
            bad = begin + int(np.flatnonzero(~np.isfinite(maxima[:, 0]))[0])
            raise LogitsError(f"the logits of position {bad} have no finite maximum")
        log_norm = maxima + np.log(np.exp(block - maxima).sum(axis=1, keepdims=True))
        log_p = block - log_norm
        probs = np.exp(log_p)
        with np.errstate(invalid="ignore"):
            weighted = np.where(probs > 0.0, probs * log_p, 0.0)
        entropy[begin:end] = np.maximum(0.0, -weighted.sum(axis=1))
        rows = np.arange(end - begin)
        chosen = target_ids[begin:end]
        target_logits = block[rows, chosen][:, None]
        ids = np.arange(n_vocab)[None, :]
        ahead = (block > target_logits) | ((block == target_logits) & (ids < chosen[:, None]))
        rank[begin:end] = 1 + ahead.sum(axis=1)
        logprob[begin:end] = log_p[rows, chosen]
        for row in range(end - begin):
            top_ids[begin + row] = top_tokens(block[row], keep)
        top_logprobs[begin:end] = np.take_along_axis(log_p, top_ids[begin:end], axis=1)
    return RowScores(logprob, rank, entropy, top_ids, top_logprobs)


def top_tokens(row: npt.NDArray[np.floating], n: int) -> npt.NDArray[np.int64]:
    """The ids of the `n` largest values of `row`, largest first (ties: lower id first)."""
    if n <= 0:
        return np.empty(0, dtype=np.int64)
    if n < row.shape[0]:
        # Everything tied with the n-th value joins the candidates, so ties break by id.
        threshold = np.partition(row, row.shape[0] - n)[row.shape[0] - n]
        candidates = np.flatnonzero(row >= threshold)
    else:
        candidates = np.arange(row.shape[0])
    order = np.lexsort((candidates, -row[candidates]))
    return candidates[order][:n].astype(np.int64)


def token_rank(
    logits: npt.NDArray[np.floating], token_id: int, top_ids: npt.NDArray[np.integer]
) -> int:
    """The 1-based rank of `token_id` by logit (ties: lower id first), as `score_rows`
    ranks a target.

    Args:
        logits: One row of the vocabulary's logits.
        token_id: The token to rank.
        top_ids: The ids of the row's first ranks in order (a step's table): a token
            among them is ranked without a pass over the vocabulary.
    """
    rows = np.flatnonzero(top_ids == token_id)
    if rows.size:
        return int(rows[0]) + 1
    value = logits[token_id]
    ahead = np.count_nonzero(logits > value)
    tied = np.count_nonzero(logits[:token_id] == value)
    return 1 + int(ahead) + int(tied)


def perplexity(total_logprob: float, n_tokens: int) -> float:
    """exp(−mean log-probability): the perplexity of n tokens whose log-probabilities
    (nats) sum to `total_logprob`.

    Raises:
        SamplescopeError: No token was scored.
    """
    if n_tokens <= 0:
        raise SamplescopeError("no token was scored: a perplexity needs at least one")
    return math.exp(-total_logprob / n_tokens)
