"""Raw-distribution scores of tokens: a golden table and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sampling.analysis.token_scores import perplexity, score_rows, token_rank, top_tokens
from sampling.errors import LogitsError, SamplescopeError
from tests.hypothesis_profiles import examples


def test_golden_table() -> None:
    # softmax([ln 4, ln 2, ln 1, ln 1]) = [0.5, 0.25, 0.125, 0.125]
    logits = np.log(np.array([[4.0, 2.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]], dtype=np.float32))
    result = score_rows(logits, [3, 2], top_n=3)
    assert result.logprob == pytest.approx([math.log(0.125), math.log(0.25)], abs=1e-7)
    # Ties break by id: token 3 comes after token 2 at equal probability.
    assert result.rank.tolist() == [4, 3]
    h0 = -(0.5 * math.log(0.5) + 0.25 * math.log(0.25) + 2 * 0.125 * math.log(0.125))
    assert result.entropy == pytest.approx([h0, math.log(4)], abs=1e-7)
    assert result.top_ids.tolist() == [[0, 1, 2], [0, 1, 2]]
    assert result.top_logprobs[0] == pytest.approx(np.log([0.5, 0.25, 0.125]), abs=1e-7)


def test_minus_infinity_logits_add_nothing() -> None:
    logits = np.array([[0.0, -np.inf, 0.0]], dtype=np.float32)
    result = score_rows(logits, [1], top_n=2)
    assert result.logprob[0] == -np.inf
    assert result.entropy[0] == pytest.approx(math.log(2))
    assert result.rank[0] == 3


def test_errors() -> None:
    with pytest.raises(LogitsError, match="2-D"):
        score_rows(np.zeros(4, dtype=np.float32), [0], top_n=1)
    with pytest.raises(LogitsError, match="outside the vocabulary"):
        score_rows(np.zeros((1, 4), dtype=np.float32), [4], top_n=1)
    with pytest.raises(LogitsError, match="2 target tokens for 1 rows"):
        score_rows(np.zeros((1, 4), dtype=np.float32), [0, 1], top_n=1)
    with pytest.raises(LogitsError, match="position 1"):
        score_rows(np.array([[0.0, 1.0], [np.nan, np.nan]], dtype=np.float32), [0, 0], 1)
    with pytest.raises(SamplescopeError, match="at least one"):
        perplexity(0.0, 0)


def test_perplexity() -> None:
    assert perplexity(2 * math.log(0.25), 2) == pytest.approx(4.0)


@settings(max_examples=examples(60), deadline=None)
@given(
    arrays(
        np.float32,
        st.tuples(st.integers(1, 40), st.integers(2, 30)),
        elements=st.floats(-30, 30, width=32),
    ),
    st.data(),
)
def test_properties(logits: np.ndarray, data: st.DataObject) -> None:
    n, vocab = logits.shape
    targets = data.draw(st.lists(st.integers(0, vocab - 1), min_size=n, max_size=n))
    top_n = data.draw(st.integers(0, vocab + 2))
    result = score_rows(logits, targets, top_n)
    wide = logits.astype(np.float64)
    log_p = wide - np.log(np.exp(wide - wide.max(1, keepdims=True)).sum(1, keepdims=True))
    log_p -= wide.max(1, keepdims=True)
    assert np.allclose(result.logprob, log_p[np.arange(n), targets], atol=1e-9)
    for row in range(n):
        # The order the samplers use: descending logit, ties by lower id.
        order = sorted(range(vocab), key=lambda t: (-float(logits[row, t]), t))
        assert order.index(targets[row]) + 1 == result.rank[row]
        assert result.top_ids[row].tolist() == order[: min(top_n, vocab)]
        assert result.top_ids[row].tolist() == top_tokens(logits[row], top_n).tolist()
        p = np.exp(log_p[row])
        assert result.entropy[row] == pytest.approx(-(p * log_p[row]).sum(), abs=1e-9)


@pytest.mark.parametrize("n_candidates", [3, 20])
def test_a_steps_rank_equals_the_rank_over_its_logits(n_candidates: int) -> None:
    # Rounded logits tie often, so the tie rule (lower id first) is exercised.
    from sampling.sampler import Sampler
    from sampling.settings.record import SamplerSettings

    rng = np.random.default_rng(11)
    rows = [np.round(rng.normal(0, 2.0, 200), 0).astype(np.float32) for _ in range(60)]
    hot = SamplerSettings(temperature=3.0, top_k=0, top_p=1.0, min_p=0.0, seed=2)
    sampler = Sampler(hot, n_candidates=n_candidates)
    steps = [sampler.sample(row) for row in rows]
    ranks = [step.rank for step in steps]
    expected = score_rows(np.stack(rows), [s.token_id for s in steps], top_n=0).rank.tolist()
    assert ranks == expected
    assert max(expected) > n_candidates  # some tokens were ranked past the table
    assert [s.rank_known for s in steps] == expected
    assert token_rank(rows[0], 5, np.empty(0, dtype=np.int64)) == expected_rank(rows[0], 5)


def expected_rank(row: np.ndarray, token: int) -> int:
    return 1 + sum(
        1 for i, v in enumerate(row) if v > row[token] or (v == row[token] and i < token)
    )
