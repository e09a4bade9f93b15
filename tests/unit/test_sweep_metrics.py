"""A sweep's figures per setting (golden values) and the Pareto frontier (properties)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.session.sweep import SweepPlan, SweepSetting
from backend.session.sweep_result import SampleRecord, SweepResult
from sampling.analysis.diversity import compression_ratio, ngram_diversity_score
from sampling.analysis.frontier import pareto_frontier
from sampling.analysis.sweep_metrics import (
    SampleFigures,
    estimate,
    sample_figures,
    setting_metrics,
)
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings
from tests.hypothesis_profiles import examples


def figures(
    prompt: int,
    setting: int,
    text: str,
    n: int,
    logprob: float,
    outside: int,
    why: str,
    looped: bool = False,
) -> SampleFigures:
    return SampleFigures(prompt, setting, text, n, logprob, outside, why, looped)


GOLDEN = [
    # prompt 0, setting 0: 10 tokens, -5 nats in all, 1 token outside the top k.
    figures(0, 0, "a b c d e", 4, -2.0, 1, "eos"),
    figures(0, 0, "a b c d f", 6, -3.0, 0, "max_tokens", looped=True),
    # prompt 1, setting 0: 10 tokens, -10 nats, 3 outside.
    figures(1, 0, "x y z w", 5, -4.0, 2, "max_tokens"),
    figures(1, 0, "x y z w", 5, -6.0, 1, "max_tokens"),
    # another setting: ignored by setting 0's figures.
    figures(0, 1, "q", 1, -9.0, 1, "eos"),
]


def test_golden_setting_metrics() -> None:
    metrics = setting_metrics(GOLDEN, 0, top_k=5)
    assert metrics.samples == 4 and metrics.top_k == 5
    assert metrics.finish_reasons == {"eos": 1, "max_tokens": 3}
    # Per prompt: -0.5 and -1.0 nats a token; their mean, and sd/sqrt(2) = 0.25.
    assert metrics.logprob is not None
    assert (metrics.logprob.mean, metrics.logprob.stderr, metrics.logprob.n) == (-0.75, 0.25, 2)
    assert metrics.perplexity is not None
    assert metrics.perplexity.mean == pytest.approx((math.exp(0.5) + math.e) / 2)
    assert metrics.perplexity.stderr == pytest.approx((math.e - math.exp(0.5)) / 2)
    assert metrics.outside_top_k is not None
    assert metrics.outside_top_k.mean == pytest.approx(0.2)  # 0.1 and 0.3
    assert metrics.outside_top_k.stderr == pytest.approx(0.1)
    assert metrics.length is not None and (metrics.length.mean, metrics.length.stderr) == (5.0, 0.0)
    # One of prompt 0's two samples looped, none of prompt 1's.
    assert metrics.loop_rate is not None
    assert (metrics.loop_rate.mean, metrics.loop_rate.stderr) == (0.25, 0.25)
    # Diversity: per prompt over that prompt's two texts.
    texts0, texts1 = ["a b c d e", "a b c d f"], ["x y z w", "x y z w"]
    assert metrics.ngram_diversity is not None
    ngd0, ngd1 = ngram_diversity_score(texts0), ngram_diversity_score(texts1)
    assert ngd0 is not None and ngd1 is not None
    assert metrics.ngram_diversity.mean == pytest.approx((ngd0 + ngd1) / 2)
    assert metrics.compression_ratio is not None
    assert metrics.compression_ratio.mean == pytest.approx(
        (compression_ratio(texts0) + compression_ratio(texts1)) / 2
    )
    # Self-repetition: prompt 0 shares "a b c d" (log 2 each); prompt 1 one 4-gram.
    assert metrics.self_repetition is not None
    assert metrics.self_repetition.mean == pytest.approx(math.log(2))
    assert metrics.self_repetition.stderr == pytest.approx(0.0)
    # distinct-1: 6/10 and 4/8; distinct-4: 3/4 and 1/2.
    d1, _, _, d4 = metrics.distinct
    assert d1 is not None and d1.mean == pytest.approx((0.6 + 0.5) / 2)
    assert d4 is not None and d4.mean == pytest.approx((0.75 + 0.5) / 2)


def test_one_prompt_has_no_standard_error_and_missing_figures_are_left_out() -> None:
    metrics = setting_metrics(GOLDEN, 1)
    assert metrics.logprob is not None and metrics.logprob.stderr is None
    assert metrics.logprob.mean == -9.0
    assert metrics.ngram_diversity is None  # one word: the package divides by zero
    assert metrics.distinct[1] is None
    assert setting_metrics(GOLDEN, 7).logprob is None
    assert estimate([None, 2.0, None, 4.0]) == estimate([2.0, 4.0])


def test_sample_figures_from_steps() -> None:
    rng = np.random.default_rng(3)
    sampler = Sampler(SamplerSettings(temperature=3.0, seed=2), n_candidates=5)
    rows = [rng.normal(0, 2, 200).astype(np.float32) for _ in range(30)]
    steps = [sampler.sample(row) for row in rows]
    result = sample_figures(2, 1, steps, "text", "eos", top_k=3)
    ranks = []
    expected = 0.0
    for row, step in zip(rows, steps, strict=True):
        wide = row.astype(np.float64)
        order = sorted(range(200), key=lambda t: (-wide[t], t))
        ranks.append(order.index(step.token_id) + 1)
        expected += float(wide[step.token_id] - np.log(np.exp(wide).sum()))
    assert result.outside_top_k == sum(rank > 3 for rank in ranks) > 0
    assert result.logprob_raw == pytest.approx(expected, abs=1e-4)
    assert (result.prompt, result.setting, result.n_tokens, result.finish_reason) == (
        2,
        1,
        30,
        "eos",
    )
    assert not result.looped
    # The same logits every step, greedy: one token over and over is a loop.
    greedy = Sampler(SamplerSettings(temperature=0.0))
    assert sample_figures(0, 0, [greedy.sample(rows[0]) for _ in range(8)], "", "eos").looped
    with pytest.raises(ValueError, match="top_k"):
        sample_figures(0, 0, steps, "", "eos", top_k=0)


def test_frontier_golden() -> None:
    points = [(1.0, 1.0), (2.0, 0.5), (0.5, 2.0), (0.4, 0.4), (2.0, 0.2), (1.0, 1.0)]
    assert pareto_frontier(points) == [2, 0, 5, 1]
    assert pareto_frontier([]) == []


@settings(max_examples=examples(120), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=12))
def test_frontier_is_the_set_of_undominated_points(raw: list[tuple[int, int]]) -> None:
    points = [(float(x), float(y)) for x, y in raw]

    def dominated(i: int) -> bool:
        x, y = points[i]
        return any(ox >= x and oy >= y and (ox, oy) != (x, y) for j, (ox, oy) in enumerate(points))

    frontier = pareto_frontier(points)
    assert sorted(frontier) == [i for i in range(len(points)) if not dominated(i)]
    xs = [points[i][0] for i in frontier]
    assert xs == sorted(xs)


#: Three samples of one prompt whose compression ratio changes with the order they
#: are joined in (as the `diversity` package's does).
ORDER_SENSITIVE = (
    "the lighthouse keeper climbed the stairs and lit the lamp at dusk",
    "a storm came in from the sea and the lamp burned all night long",
    "the keeper climbed the stairs at dawn and put out the lamp again",
)


def order_sensitive_result(order: list[int]) -> SweepResult:
    """A sweep of one setting, two prompts, three samples each, its records in `order`
    (the order they finished)."""
    plan = SweepPlan(("p0", "p1"), (SweepSetting("t=1", SamplerSettings()),), 3, seed=7)
    records = []
    for prompt in range(2):
        for sample, text in enumerate(ORDER_SENSITIVE if prompt == 0 else ORDER_SENSITIVE[::-1]):
            figure = figures(prompt, 0, text, 12 + sample, -3.0 - sample, sample, "eos")
            records.append(SampleRecord(figure, sample, 7 + sample, tuple(range(12)), None))
    return SweepResult("model.gguf", plan, tuple(records[i] for i in order))


def test_figures_do_not_depend_on_the_order_samples_finished() -> None:
    """The texts are joined in sample (seed) order, whatever order the samples finished
    in (batching, --parallel, --in-turn decide that)."""
    joined = [ORDER_SENSITIVE[i] for i in (1, 0, 2)]
    assert compression_ratio(joined) != compression_ratio(list(ORDER_SENSITIVE))
    seed_order = order_sensitive_result(list(range(6))).metrics
    cr = seed_order[0].compression_ratio
    assert cr is not None
    expected = (
        compression_ratio(list(ORDER_SENSITIVE)) + compression_ratio(list(ORDER_SENSITIVE[::-1]))
    ) / 2
    assert cr.mean == pytest.approx(expected)
    shuffler = random.Random(11)
    for _ in range(20):
        order = list(range(6))
        shuffler.shuffle(order)
        assert order_sensitive_result(order).metrics == seed_order, order
