"""A reply's score from its steps, against the softmax of the logits it came from.

The raw probabilities share the entropy's normaliser, summed at the logits' own precision
(float32): within 1e-6 a token of a float64 softmax.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend.store.steps import layout_of, pack_step, unpack_step
from sampling.analysis.reply_score import reply_score
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings
from tests.section_steps import A, T, steps_of
from tui.cli.reply_score_json import reply_score_json


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


def test_a_thinking_reply_is_scored_by_section() -> None:
    # Thinking: e^-1, e^-2, e^-3 (6 nats over 3 tokens); answer: e^-1 twice (2 over 2),
    # one of them 0.005 in the distribution drawn from.
    kinds = [T, T, T, A, A]
    steps = steps_of([5, 6, 7, 8, 9], [math.exp(-k) for k in (1, 2, 3, 1, 1)], kinds)
    steps[4] = replace(steps[4], prob=0.005)
    score = reply_score(steps)
    assert score is not None and score.thinking is not None and score.answer is not None
    assert (score.n_tokens, score.thinking.n_tokens, score.answer.n_tokens) == (5, 3, 2)
    assert score.logprob_raw == pytest.approx(-8.0)
    assert score.thinking.logprob_raw == pytest.approx(-6.0)
    assert score.thinking.logprob_per_token == pytest.approx(-2.0)
    assert score.thinking.perplexity == pytest.approx(math.exp(2.0))
    assert score.answer.logprob_raw == pytest.approx(-2.0)
    assert score.answer.perplexity == pytest.approx(math.e)
    assert score.answer.logprob_sampled == pytest.approx(-1.0 + math.log(0.005))
    assert [kind for kind, _ in score.sections] == [T, A]
    assert score.thinking.thinking is None and score.answer.answer is None


def test_a_reply_that_ends_in_its_thinking_has_no_answer_score() -> None:
    score = reply_score(steps_of([1, 2], [0.5, 0.25], [T, T]))
    assert score is not None and score.thinking is not None and score.answer is None
    assert score.thinking.logprob_raw == pytest.approx(math.log(0.125))
    assert [kind for kind, _ in score.sections] == [T]


@given(st.lists(st.tuples(st.floats(0.001, 1.0), st.booleans()), min_size=1, max_size=30))
def test_the_sections_add_up_to_the_reply(rows: list[tuple[float, bool]]) -> None:
    kinds = [T if thinking else A for _, thinking in rows]
    steps = steps_of(range(len(rows)), [p for p, _ in rows], kinds)
    score = reply_score(steps)
    assert score is not None
    answer_only = reply_score([replace(step, section=A) for step in steps])
    if T not in kinds:
        assert score == answer_only and score.sections == ()
        return
    parts = [section for _, section in score.sections]
    assert sum(part.n_tokens for part in parts) == score.n_tokens
    assert sum(part.logprob_raw or 0.0 for part in parts) == pytest.approx(score.logprob_raw)
    # The whole reply's figures are those of a reply that does not think.
    assert answer_only is not None
    assert replace(score, thinking=None, answer=None) == answer_only


def test_the_json_has_the_sections_only_when_the_reply_thinks() -> None:
    plain = steps_of([1, 2, 3], [0.5, 0.25, 0.0], [A, A, A])
    whole = reply_score_json(plain)
    assert whole is not None and "thinking" not in whole and "answer" not in whole
    assert whole["logprob_raw"] is None and whole["n_tokens"] == 3
    thinking = reply_score_json(steps_of([1, 2, 3], [0.5, 0.25, 0.0], [T, T, A]))
    assert thinking is not None
    assert {k: v for k, v in thinking.items() if k not in ("thinking", "answer")} == whole
    assert thinking["thinking"]["n_tokens"] == 2
    assert thinking["thinking"]["logprob_raw"] == pytest.approx(math.log(0.125))
    assert thinking["answer"]["n_tokens"] == 1 and thinking["answer"]["logprob_raw"] is None
    assert "thinking" not in thinking["answer"]
    json.dumps(thinking, allow_nan=False)
    ended = reply_score_json(steps_of([1], [0.5], [T]))
    assert ended is not None and ended["answer"] is None
