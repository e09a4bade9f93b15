"""A sweep's figures by section: the thinking's and the answer's length, loops and
logp/token, as columns when a sample thinks, and the figures as before when none does."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend.session.sweep import SweepPlan, SweepSetting
from backend.session.sweep_result import (
    METRIC_NAMES,
    SECTION_METRIC_NAMES,
    SampleRecord,
    SweepFileError,
    SweepResult,
)
from sampling.analysis.loops import LoopRule
from sampling.analysis.sweep_metrics import (
    SampleFigures,
    SectionFigures,
    sample_figures,
    setting_metrics,
)
from sampling.settings.record import SamplerSettings
from tests.section_steps import A, T, steps_of
from tui.cli.commands.sweep.output import csv_text, print_table

RULE = LoopRule(1, 4, 3)


def thinking(
    prompt: int, n_think: int, lp_think: float, n_answer: int, lp_answer: float, loops: str = ""
) -> SampleFigures:
    """A sample of setting 0 that thinks; `loops` names the sections that looped ("ta")."""
    sections = (
        SectionFigures(T, n_think, lp_think, "t" in loops),
        SectionFigures(A, n_answer, lp_answer, "a" in loops),
    )
    n = n_think + n_answer
    return SampleFigures(prompt, 0, "a b", n, lp_think + lp_answer, 0, "eos", bool(loops), sections)


GOLDEN = [
    # prompt 0: thinking 10 and 6 tokens (-8, -4 nats), answer 2 and 4 (-3, -3).
    thinking(0, 10, -8.0, 2, -3.0, loops="t"),
    thinking(0, 6, -4.0, 4, -3.0),
    # prompt 1: one sample thinks (4 tokens, -4), one does not (5 tokens, -10).
    thinking(1, 4, -4.0, 1, -1.0, loops="ta"),
    SampleFigures(1, 0, "x y", 5, -10.0, 0, "max_tokens", False),
]


def test_golden_section_metrics() -> None:
    metrics = setting_metrics(GOLDEN, 0)
    length, answer = metrics.thinking_length, metrics.answer_length
    # Thinking per sample: 8 and 2 (mean 5 ± 3); answer: 3 and 3 (3 ± 0).
    assert length is not None and (length.mean, length.stderr, length.n) == (5.0, 3.0, 2)
    assert answer is not None and (answer.mean, answer.stderr) == (3.0, 0.0)
    # Loops in the thinking: 1/2 and 1/2; in the answer: 0 and 1/2.
    rate, answer_rate = metrics.thinking_loop_rate, metrics.answer_loop_rate
    assert rate is not None and (rate.mean, rate.stderr) == (0.5, 0.0)
    assert answer_rate is not None and (answer_rate.mean, answer_rate.stderr) == (0.25, 0.25)
    # logp/token of the thinking: -12/16 and -4/4; of the answer: -6/6 and -11/6.
    logprob, answer_logprob = metrics.thinking_logprob, metrics.answer_logprob
    assert logprob is not None and logprob.mean == pytest.approx((-0.75 - 1.0) / 2)
    assert logprob.stderr == pytest.approx(0.125)
    assert answer_logprob is not None
    assert answer_logprob.mean == pytest.approx((-1.0 - 11 / 6) / 2)
    # The whole figures are as they were: 22 tokens and -18 nats, 10 and -15.
    assert metrics.logprob is not None
    assert metrics.logprob.mean == pytest.approx((-18 / 22 - 15 / 10) / 2)
    assert metrics.loop_rate is not None and metrics.loop_rate.mean == 0.5


def test_no_sample_thinks_no_section_figures() -> None:
    plain = [replace(f, sections=()) for f in GOLDEN]
    metrics = setting_metrics(plain, 0)
    assert metrics.thinking_length is None and metrics.answer_logprob is None
    # A setting where no sample thinks, in a sweep where one does: all answer.
    mixed = setting_metrics([*GOLDEN, replace(GOLDEN[3], setting=1)], 1)
    assert mixed.thinking_length is not None and mixed.thinking_length.mean == 0.0
    assert mixed.answer_length is not None and mixed.answer_length.mean == 5.0
    assert mixed.thinking_logprob is None  # no thinking token to take it over


def test_sample_figures_by_section_from_steps() -> None:
    # Thinking "7 7 7" loops (3 copies of one token), then the answer "7 7" does not.
    probs = [0.5, 0.5, 0.25, 0.5, 0.125]
    steps = steps_of([7, 7, 7, 7, 7], probs, [T, T, T, A, A])
    figures = sample_figures(0, 0, steps, "text", "eos", loop_rule=RULE)
    assert figures.thinks and figures.looped
    think, answer = figures.sections
    assert (think.kind, think.n_tokens, think.looped) == (T, 3, True)
    assert think.logprob_raw == pytest.approx(math.log(0.0625))
    assert (answer.kind, answer.n_tokens, answer.looped) == (A, 2, False)
    assert answer.logprob_raw == pytest.approx(math.log(0.0625))
    # Across the boundary "7 7 | 7" is two runs: no loop.
    split = sample_figures(0, 0, steps_of([7] * 4, [0.5] * 4, [T, T, A, A]), "", "eos", 3, RULE)
    assert not split.looped and not any(part.looped for part in split.sections)


@given(st.lists(st.tuples(st.integers(0, 2), st.booleans()), max_size=30))
def test_the_sections_add_up_and_no_thinking_is_as_before(rows: list[tuple[int, bool]]) -> None:
    tokens = [token for token, _ in rows]
    kinds = [T if think else A for _, think in rows]
    steps = steps_of(tokens, [0.5] * len(rows), kinds)
    figures = sample_figures(0, 0, steps, "", "eos", loop_rule=RULE)
    answer_only = sample_figures(
        0, 0, steps_of(tokens, [0.5] * len(rows), [A] * len(rows)), "", "eos", loop_rule=RULE
    )
    if T not in kinds:
        assert figures == answer_only and not figures.thinks
        return
    assert sum(part.n_tokens for part in figures.sections) == figures.n_tokens
    assert figures.looped == any(part.looped for part in figures.sections)
    assert replace(figures, sections=(), looped=False) == replace(answer_only, looped=False)


def sweep_of(samples: list[SampleFigures]) -> SweepResult:
    plan = SweepPlan(("p0", "p1"), (SweepSetting("t=1", SamplerSettings()),), 2, seed=7)
    records = [
        SampleRecord(f, n % 2, 7 + n % 2, tuple(range(f.n_tokens)), None)
        for n, f in enumerate(samples)
    ]
    return SweepResult("model.gguf", plan, tuple(records))


def test_the_json_csv_and_table_have_the_sections_when_a_sample_thinks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = sweep_of(GOLDEN)
    assert result.thinks and result.metric_names == METRIC_NAMES + SECTION_METRIC_NAMES
    values = result.to_json()
    assert set(values["settings"][0]["metrics"]) == set(METRIC_NAMES + SECTION_METRIC_NAMES)
    assert values["settings"][0]["metrics"]["thinking_length"]["mean"] == 5.0
    assert values["samples"][0]["sections"] == [
        {"kind": "thinking", "n_tokens": 10, "logprob_raw": -8.0, "looped": True},
        {"kind": "answer", "n_tokens": 2, "logprob_raw": -3.0, "looped": False},
    ]
    assert "sections" not in values["samples"][3]
    again = SweepResult.from_json(json.loads(json.dumps(values)))
    assert again.samples == result.samples and again.metrics == result.metrics
    header = csv_text(result).splitlines()[0].split(",")
    assert "thinking_length" in header and "answer_logprob_n" in header
    print_table(result)
    table = capsys.readouterr().out
    assert "think len" in table and "answer loops %" in table


def test_a_sweep_where_none_thinks_has_no_section_columns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = sweep_of([replace(f, sections=()) for f in GOLDEN])
    assert not result.thinks and result.metric_names == METRIC_NAMES
    values = result.to_json()
    assert set(values["settings"][0]["metrics"]) == set(METRIC_NAMES)
    assert all("sections" not in sample for sample in values["samples"])
    assert "thinking" not in csv_text(result)
    print_table(result)
    assert "think" not in capsys.readouterr().out


def test_a_malformed_section_is_a_sweep_file_error() -> None:
    values = sweep_of(GOLDEN).to_json()
    values["samples"][0]["sections"] = [{"kind": "musing", "n_tokens": 1}]
    with pytest.raises(SweepFileError, match="not a sweep result"):
        SweepResult.from_json(values)
