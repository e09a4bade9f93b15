"""Hostile sweep inputs: a `--prompts` file (plain or JSONL) and a `--view` result of
any bytes, `--grid` lists of any text and size, and `--stop-on-loop` rules and
[loops] tables of any numbers give prompts, a result, settings or a rule within the
stated limits, or one error line, never another exception, a hang or an allocation
the limits do not bound. Examples per run come from the hypothesis profile
(tests/conftest.py).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.config.loops_table import parse_loops
from backend.session.sweep import MAX_SETTINGS
from backend.session.sweep_result import SweepFileError
from sampling.analysis.loops import LONGEST_PERIOD, LoopRule, LoopWatch
from sampling.errors import SamplescopeError
from tui.cli.commands.sweep import read_result
from tui.cli.commands.sweep.args import grid_settings, read_prompts

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
JSON_PIECES = ["[", "]", "{", "}", '"prompt"', ":", ",", '"x"', "1e999", "null", "\n", " "]


@pytest.fixture(scope="module")
def work() -> Path:
    return Path(tempfile.mkdtemp(prefix="samplescope-fuzz-sweep-"))


def one_line(error: Exception, path: Path | None = None) -> None:
    assert "\n" not in str(error), str(error)
    if path is not None:
        assert str(path) in str(error), str(error)


@HEALTH
@given(
    st.one_of(
        st.binary(max_size=300),
        st.lists(st.sampled_from(JSON_PIECES), max_size=40).map("".join).map(str.encode),
        st.integers(1, 5000).map(lambda n: b"[" * n + b"]" * n),
    ),
    st.sampled_from(["prompts.txt", "prompts.jsonl"]),
)
def test_a_prompts_file_of_any_bytes_is_prompts_or_one_line(
    work: Path, data: bytes, name: str
) -> None:
    path = work / name
    path.write_bytes(data)
    try:
        prompts = read_prompts([], path)
    except SamplescopeError as error:
        one_line(error)
        return
    assert prompts and all(isinstance(p, str) and p.strip() for p in prompts)


@HEALTH
@given(
    st.one_of(
        st.binary(max_size=300),
        st.lists(st.sampled_from(JSON_PIECES), max_size=40).map("".join).map(str.encode),
        st.integers(1, 5000).map(lambda n: b"{\"a\":" * n + b"1" + b"}" * n),
        st.dictionaries(st.sampled_from(["settings", "prompts", "samples", "model"]),
                        st.one_of(st.integers(), st.text(max_size=5), st.lists(st.none())))
        .map(lambda d: json.dumps(d).encode()),
    )
)  # fmt: skip
def test_a_view_file_of_any_bytes_is_a_result_or_one_line(work: Path, data: bytes) -> None:
    path = work / "result.json"
    path.write_bytes(data)
    try:
        read_result(path)
    except (SweepFileError, SamplescopeError) as error:
        one_line(error)


@HEALTH
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["t", "k", "min_p", "top_p", "seed", "nope", "grammar", ""]),
            st.one_of(
                st.integers(1, 20_000).map(lambda n: ",".join(str(v) for v in range(1, n + 1))),
                st.text(max_size=20),
            ),
        ),
        max_size=3,
    ),
    st.lists(st.sampled_from(["min_p=0.1", "t=1", "temperature=1.0", "k=5", "x=1"]), max_size=3),
)
def test_any_grid_is_bounded_settings_or_one_line(
    axes: list[tuple[str, str]], sets: list[str]
) -> None:
    grids = [f"{key}={values}" for key, values in axes]
    try:
        settings_made = grid_settings(sets, grids, "first")
    except (SamplescopeError, ValueError) as error:
        one_line(error)
        return
    assert 1 <= len(settings_made) <= MAX_SETTINGS
    assert len({s.settings for s in settings_made}) == len(settings_made)


BIG = st.one_of(st.integers(-5, 300), st.integers(min_value=-(2**70), max_value=2**70))


@HEALTH
@given(st.one_of(st.tuples(BIG, BIG, BIG).map(lambda t: ",".join(map(str, t))),
                 st.text(max_size=20)))  # fmt: skip
def test_any_loop_rule_is_bounded_or_one_line(text: str) -> None:
    try:
        rule = LoopRule.parse(text)
    except ValueError as error:
        one_line(error)
        return
    assert 1 <= rule.min_period <= rule.max_period <= LONGEST_PERIOD
    assert 2 <= rule.min_count <= LONGEST_PERIOD
    watch = LoopWatch(rule)  # bounded by the rule: a few arrays of max_period
    watch.push(1)


LOOP_KEYS = st.sampled_from(["mode", "min_period", "max_period", "min_count"])
LOOP_VALUES = st.one_of(BIG, st.floats(), st.text(max_size=5), st.booleans())


@HEALTH
@given(st.dictionaries(LOOP_KEYS, LOOP_VALUES))
def test_any_loops_table_is_a_bounded_guard_or_one_line(table: dict[str, object]) -> None:
    def fail(section: str | None, key: str, problem: str) -> Exception:
        return ValueError(f"[{section}] {key}: {problem}")

    try:
        guard = parse_loops(table, fail)
    except ValueError as error:
        one_line(error)
        return
    assert guard.rule.max_period <= LONGEST_PERIOD
