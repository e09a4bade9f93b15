"""A reply's score from its steps, against the softmax of the logits it came from.

The raw probabilities share the entropy's normaliser, summed at the logits' own precision
(float32): within 1e-6 a token of a float64 softmax.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from backend.store.steps import layout_of, pack_step, unpack_step
from sampling.analysis.reply_score import reply_score
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings


def sampled_reply(settings: SamplerSettings, n_candidates: int, rounds: int = 40):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    sampler = Sampler(settings, n_candidates=n_candidates)
    rows = [rng.normal(0, 2.5, 300).astype(np.float32) for _ in range(rounds)]
    return rows, [sampler.sample(row) for row in rows]


def raw_logprob(row: np.ndarray, token: int) -> float:
    wide = row.astype(np.float64)
    return float(wide[token] - wide.max() - np.log(np.exp(wide - wide.max()).sum()))


@pytest.mark.parametrize("n_candidates", [3, 20])
def test_raw_logprob_equals_softmax_of_the_logits(n_candidates: int) -> None:
    # A hot temperature with no filter draws tokens far below the table's rows.
    settings = SamplerSettings(temperature=2.0, top_k=0, top_p=1.0, min_p=0.0, seed=3)
    rows, steps = sampled_reply(settings, n_candidates)
    assert any(step.token_id not in step.table.token_ids for step in steps)
    score = reply_score(steps)
    assert score is not None and score.n_tokens == len(steps)
    expected = [raw_logprob(row, step.token_id) for row, step in zip(rows, steps, strict=True)]
    assert score.logprob_raw == pytest.approx(sum(expected), abs=len(steps) * 1e-6)
    assert score.perplexity == pytest.approx(math.exp(-sum(expected) / len(steps)))
    assert score.logprob_sampled == pytest.approx(sum(math.log(s.prob) for s in steps))
    assert score.mean_entropy == pytest.approx(np.mean([s.entropy for s in steps]))
    assert score.low_prob_tokens == sum(1 for lp in expected if lp < math.log(0.01))


def test_filters_make_the_sampled_logprob_higher() -> None:
    rows, steps = sampled_reply(DEFAULT_CHAT_SETTINGS.with_changes(seed=5), 20)
    score = reply_score(steps)
    assert score is not None and score.logprob_raw is not None
    assert score.logprob_sampled > score.logprob_raw
    expected = [raw_logprob(row, step.token_id) for row, step in zip(rows, steps, strict=True)]
    assert score.logprob_raw == pytest.approx(sum(expected), abs=len(steps) * 1e-6)


def test_a_stored_step_falls_back_to_its_table_row() -> None:
    settings = SamplerSettings(temperature=2.0, top_k=0, top_p=1.0, min_p=0.0, seed=3)
    _rows, steps = sampled_reply(settings, 3)
    unrecorded = [replace(step, logit=None) for step in steps]
    in_table = [s for s in unrecorded if s.token_id in s.table.token_ids]
    outside = [s for s in unrecorded if s.token_id not in s.table.token_ids]
    assert in_table and outside
    for step, original in zip(unrecorded, steps, strict=True):
        if step in in_table:
            assert step.prob_unfiltered == pytest.approx(original.prob_unfiltered, rel=1e-12)
    score = reply_score(unrecorded)
    assert score is not None and score.logprob_raw is None and score.perplexity is None
    assert reply_score([]) is None


def test_the_logit_is_stored_with_the_step() -> None:
    settings = SamplerSettings(temperature=2.0, top_k=0, top_p=1.0, min_p=0.0, seed=3)
    _rows, steps = sampled_reply(settings, 3)
    layout = layout_of(steps[0])
    for step in steps:
        again = unpack_step(*pack_step(step, layout), layout, step.settings)
        # The table's columns are stored as float32.
        assert again.prob_unfiltered == pytest.approx(step.prob_unfiltered, rel=1e-5)
