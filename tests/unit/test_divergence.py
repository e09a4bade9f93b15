"""KL divergence per position and llama-perplexity's totals (sampling.analysis.divergence),
against an independent float64 computation."""

from __future__ import annotations

import numpy as np
import pytest

from sampling.analysis.divergence import (
    DivergenceTotals,
    compare_rows,
    mean_and_uncertainty,
    percentile,
    summarize,
)
from sampling.analysis.logprob_codec import CLIP_NATS, encode_rows
from sampling.errors import LogitsError


def log_softmax64(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    top = x.max(axis=-1, keepdims=True)
    return x - top - np.log(np.exp(x - top).sum(axis=-1, keepdims=True))


def clipped(log_p: np.ndarray) -> np.ndarray:
    """The base as stored: every log-probability at least 16 nats under the top."""
    floor = np.maximum(log_p.min(axis=1), log_p.max(axis=1) - CLIP_NATS)
    return np.maximum(log_p, floor[:, None])


def pair(seed: int, n: int = 40, n_vocab: int = 500, noise: float = 0.7) -> tuple[np.ndarray, ...]:
    """Base and test logits (the test a noisy copy) and the tokens that came."""
    rng = np.random.default_rng(seed)
    base = (rng.standard_normal((n, n_vocab)) * 3).astype(np.float32)
    test = (base + rng.standard_normal((n, n_vocab)) * noise).astype(np.float32)
    tokens = rng.integers(0, n_vocab, n)
    return base, test, tokens


def test_positions_match_float64_numpy() -> None:
    base, test, tokens = pair(1)
    got = compare_rows(test, encode_rows(base), tokens)
    log_b = clipped(log_softmax64(base))
    log_t = log_softmax64(test)
    rows = np.arange(len(tokens))
    counted = log_b > -16.0
    kld = np.where(counted, np.exp(log_b) * (log_b - log_t), 0.0).sum(axis=1)
    reverse = (np.exp(log_t) * (log_t - log_b)).sum(axis=1)
    assert got.kld == pytest.approx(kld, rel=1e-3, abs=2e-4)
    assert got.kld_reverse == pytest.approx(reverse, rel=1e-3, abs=2e-4)
    assert got.nll_test == pytest.approx(-log_t[rows, tokens], rel=1e-5)
    assert got.nll_base == pytest.approx(-log_b[rows, tokens], abs=2e-4)
    p_diff = np.exp(log_t[rows, tokens]) - np.exp(log_b[rows, tokens])
    assert got.delta_p == pytest.approx(p_diff, abs=1e-5)
    assert got.top_test.tolist() == test.argmax(axis=1).tolist()
    assert got.top_base.tolist() == base.argmax(axis=1).tolist()


def test_a_model_against_itself() -> None:
    base, _, tokens = pair(2)
    got = compare_rows(base, encode_rows(base), tokens)
    # Only the codec's rounding (a step of 16/65535 nats, and the rounded base no
    # longer sums to exactly 1) separates the two: llama-perplexity's floor of noise.
    assert np.all(np.abs(got.kld) < 1e-4)
    assert np.all(got.top_test == got.top_base)
    assert np.all(np.abs(got.delta_p) < 1e-4)


def test_summary_matches_numpy() -> None:
    totals = DivergenceTotals()
    base, test, tokens = pair(3, n=300)
    for start in (0, 120, 200):  # several chunks
        part = slice(start, {0: 120, 120: 200, 200: 300}[start])
        totals.add(compare_rows(test[part], encode_rows(base[part]), tokens[part]))
    summary = summarize(totals)
    got = compare_rows(test, encode_rows(base), tokens)
    n = 300
    kld = got.kld
    assert summary.count == n
    assert summary.kld.value == pytest.approx(kld.mean(), rel=1e-9)
    assert summary.kld.uncertainty == pytest.approx(kld.std() / np.sqrt(n - 1), rel=1e-6)
    nll = got.nll_test.astype(np.float64)
    nll_base = got.nll_base.astype(np.float64)
    assert summary.ppl_test.value == pytest.approx(np.exp(nll.mean()), rel=1e-6)
    assert summary.ppl_base.value == pytest.approx(np.exp(nll_base.mean()), rel=1e-6)
    assert summary.ppl_test.uncertainty == pytest.approx(
        np.exp(nll.mean()) * nll.std() / np.sqrt(n - 1), rel=1e-5
    )
    assert summary.log_ppl_correlation == pytest.approx(np.corrcoef(nll, nll_base)[0, 1], rel=1e-5)
    ratio_error = np.sqrt(np.var(nll - nll_base) / (n - 1))
    assert summary.log_ppl_ratio.value == pytest.approx(nll.mean() - nll_base.mean(), rel=1e-9)
    assert summary.log_ppl_ratio.uncertainty == pytest.approx(ratio_error, rel=1e-4)
    for label, level in (("99.0%", 99.0), ("90.0%", 90.0), ("10.0%", 10.0), ("Median", 50.0)):
        assert summary.kld_at(label) == pytest.approx(np.percentile(kld, level), rel=1e-5)
    assert summary.kld_at("Maximum") == pytest.approx(kld.max(), rel=1e-6)
    assert summary.kld_at("Minimum") == pytest.approx(kld.min(), rel=1e-6)
    dp = got.delta_p.astype(np.float64)
    assert summary.delta_p.value == pytest.approx(dp.mean(), rel=1e-6)
    assert summary.rms_delta_p.value == pytest.approx(np.sqrt((dp**2).mean()), rel=1e-6)
    same = np.mean(got.top_test == got.top_base)
    assert summary.same_top.value == same
    assert summary.same_top.uncertainty == pytest.approx(np.sqrt(same * (1 - same) / (n - 1)))
    assert dict(summary.delta_p_percentiles)["75.0%"] == pytest.approx(
        np.percentile(dp, 75), rel=1e-5, abs=1e-7
    )


def test_llama_perplexitys_small_sample_rules() -> None:
    # No uncertainty from 10 values or fewer.
    assert mean_and_uncertainty(10.0, 30.0, 10).uncertainty == 0.0
    assert mean_and_uncertainty(11.0, 30.0, 11).uncertainty > 0.0
    assert mean_and_uncertainty(0.0, 0.0, 0).value == 0.0
    values = np.array([0.0, 1.0, 2.0, 10.0], dtype=np.float32)
    assert percentile(values, 0.5) == pytest.approx(1.5)
    assert percentile(values, 0.0) == 0.0
    assert percentile(values, 1.0) == 10.0


def test_errors_name_the_problem() -> None:
    base, test, tokens = pair(4, n=3, n_vocab=10)
    with pytest.raises(LogitsError, match="one of each per position"):
        compare_rows(test, encode_rows(base), tokens[:2])
    with pytest.raises(LogitsError, match="outside the vocabulary"):
        compare_rows(test, encode_rows(base), np.array([0, 1, 10]))
    with pytest.raises(LogitsError, match="at least 2"):
        summarize(DivergenceTotals())
