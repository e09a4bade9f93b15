"""Fuzzing sampler plug-in files: the settings a plug-in declares (names, kinds,
defaults, ranges, short keys and flags, sliders, groups) and files that are no Python.

`samplescope samplers --sampler-file FILE` lists the plug-in or says in one line what
is wrong with it (exit code 2), never an unforeseen error; a plug-in that loads has
settings that build, format and read back. Examples per run come from the hypothesis
profile (tests/conftest.py): three properties of 40 examples each (two fifths of the
profile's count).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tui.cli.unexpected
from sampling.plugins import PluginError
from sampling.settings.record import SamplerSettings
from tests.registries import with_plugin
from tui.cli.main import main

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FEWER = settings(HEALTH, max_examples=max(10, settings().max_examples * 2 // 5))
"""Each example runs the whole command line (its parsers built twice): 40 of the
profile's 100."""

NUMBERS = [0, 1, -1, 0.5, 1e300, math.nan, math.inf, -math.inf, 10**30, True]
VALID = st.sampled_from(["bonus", "bonus_b", "bonus_c"])


def literal(value: object) -> str:
    """Python source for a value (NaN and the infinities as float() calls)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    return repr(value)


numbers = st.sampled_from(NUMBERS).map(literal)
slider_part = st.sampled_from(["0.0", "1.0", "-1.0", "0.1", "0", *map(literal, NUMBERS[5:8])])
spec_source = st.builds(
    lambda name, kind, default, minimum, maximum, short_key, short_flag, slider, group, label: (
        f"SettingSpec({name!r}, {kind!r}, default={default}, label={label!r}, help='h',"
        f" group={group!r}, minimum={minimum}, maximum={maximum},"
        f" short_key={short_key!r}, short_flag={short_flag!r}, slider={slider})"
    ),
    st.one_of(VALID, VALID, st.sampled_from(
        ["temperature", "top_k", "max_tokens", "model", "help", "h", "", "class", "x-y", "é",
         "_", "set", "json", "seed"])),
    st.sampled_from(["float", "float", "int", "bool", "choice", "text", "texts", "bias", "order",
                     "x"]),
    st.one_of(numbers, st.sampled_from(["0.0", "0.0", "'x'", "''", "()", "('a',)", "None"])),
    st.one_of(st.just("None"), numbers),
    st.one_of(st.just("None"), numbers),
    st.sampled_from([None, None, "t", "k", "zz", "", "a b", "bonus", "é"]),
    st.sampled_from([None, None, "-t", "-k", "-x", "-h", "-q", "x", "--", "-1", "-é", "--bonus"]),
    st.one_of(
        st.just("None"),
        st.just("SliderRange(0.0, 1.0, hard_min=0.0, hard_max=1.0, fine=0.1, coarse=0.5)"),
        st.builds(
            lambda *values: "SliderRange({}, {}, hard_min={}, hard_max={}, fine={}, coarse={})"
            .format(*values),
            *[slider_part for _ in range(6)],
        ),
    ),
    st.sampled_from(["bonus", "bonus", "core", "nowhere"]),
    st.sampled_from(["bonus", "", "a label far too long for the panel", "\x1b[31m"]),
)  # fmt: skip


def plugin_source(unit_name: str, specs: list[str], reads: str | None) -> str:
    """A plug-in file whose unit declares `specs` and reads setting `reads`."""
    value = f"settings.value({reads!r})" if reads else "None"
    return f"""
from dataclasses import dataclass

from sampling.plugins import SettingSpec, SliderRange, Stateless


@dataclass(frozen=True)
class Fuzzed(Stateless):
    name = {unit_name!r}
    kind = "logits"
    specs = ({"".join(spec + ", " for spec in specs)})
    group_titles = {{"bonus": "bonus"}}
    label = "fuzzed"
    row_label = "fuzzed"

    @classmethod
    def from_settings(cls, settings):
        {value}
        return None

    def apply(self, candidates):
        pass


SAMPLER = Fuzzed
"""


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="samplescope-fuzz-plugins-"))
    saved = {
        name: os.environ.get(name) for name in ("SAMPLESCOPE_CONFIG_DIR", "SAMPLESCOPE_LOG_DIR")
    }
    os.environ["SAMPLESCOPE_CONFIG_DIR"] = str(folder / "config")
    os.environ["SAMPLESCOPE_LOG_DIR"] = str(folder / "logs")
    yield folder
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def unforeseen(error: BaseException, argv: object) -> int:
    raise AssertionError(f"an unforeseen error reached the top level: {error!r}")


def run_samplers(path: Path) -> tuple[int, str]:
    """`samplescope samplers --sampler-file PATH`: its exit code and stderr; every plug-in
    loaded only for that run (main builds its registry from the built-in units). When
    it ran, the plug-in's settings are checked in the registry it loads into."""
    original = tui.cli.unexpected.report_unexpected
    tui.cli.unexpected.report_unexpected = unforeseen
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["samplers", "--sampler-file", str(path)])
        if code == 0:
            check_loaded_settings(path)
    finally:
        tui.cli.unexpected.report_unexpected = original
    return code, err.getvalue()


def check_loaded_settings(path: Path) -> None:
    """Every setting of the plug-in at `path` (when it loads): its default builds
    settings, and formats and reads back."""
    try:
        joined = with_plugin(path)
    except PluginError:
        return
    chosen = SamplerSettings(joined)
    for spec in joined.plugin_settings.values():
        value = chosen.value(spec.name)
        assert spec.parse(spec.format(value)) == value or value != value  # NaN aside


@FEWER
@given(
    st.sampled_from(["fuzzed", "fuzzed", "fuzzed", "temperature", "", "class", "top_k", "x y"]),
    st.lists(spec_source, max_size=3),
    st.sampled_from([None, "bonus", "missing"]),
)
def test_a_plugin_declaring_any_settings_loads_or_is_one_line(
    work: Path, unit_name: str, specs: list[str], reads: str | None
) -> None:
    path = work / "fuzzed.py"
    path.write_text(plugin_source(unit_name, specs, reads), encoding="utf-8")
    code, err = run_samplers(path)
    assert code in (0, 2), err
    lines = [line for line in err.splitlines() if line]
    if code == 2:
        assert len(lines) == 1 and str(path) in lines[0], err
    else:  # a clash with a command's flag: the plug-in is left out, in one line
        assert all(str(path) in line for line in lines), err


well_formed_spec = st.builds(
    lambda name, kind_default, bounds, short_key, short_flag, slider: (
        f"SettingSpec({name!r}, {kind_default[0]!r}, default={kind_default[1]}, label='b',"
        f" help='h', group='bonus', minimum={bounds[0]}, maximum={bounds[1]},"
        f" off={kind_default[1]}, short_key={short_key!r}, short_flag={short_flag!r},"
        f" slider={slider})"
    ),
    st.sampled_from(["bonus", "bonus_b", "max_tokens", "model", "help", "json", "set", "h"]),
    st.sampled_from([("float", "0.0"), ("int", "0"), ("bool", "False"), ("text", "''"),
                     ("texts", "()"), ("bias", "()")]),
    st.sampled_from([("None", "None"), ("0", "1"), ("-1e300", "1e300"), ("0", "0"), ("-1", "1")]),
    st.sampled_from([None, "b", "bb", "t", "q"]),
    st.sampled_from([None, "-b", "-q", "-t", "-h", "-v", "-p", "-m"]),
    st.one_of(
        st.just("None"),
        st.builds(
            lambda *values: "SliderRange({}, {}, hard_min={}, hard_max={}, fine={}, coarse={})"
            .format(*values),
            *[st.sampled_from(["0.0", "1.0", "-1.0", "0.1", "1e300", "1e-300"]) for _ in range(6)],
        ),
    ),
)  # fmt: skip


@FEWER
@given(st.lists(well_formed_spec, min_size=1, max_size=2))
def test_a_well_formed_plugin_loads_or_is_left_out_in_one_line(
    work: Path, specs: list[str]
) -> None:
    path = work / "formed.py"
    path.write_text(plugin_source("fuzzed", specs, None), encoding="utf-8")
    code, err = run_samplers(path)
    assert code in (0, 2), err
    lines = [line for line in err.splitlines() if line]
    assert len(lines) <= 1 and all(str(path) in line for line in lines), err


@FEWER
@given(st.binary(max_size=120))
def test_random_bytes_as_a_plugin_are_one_line(work: Path, data: bytes) -> None:
    path = work / "bytes.py"
    path.write_bytes(data)
    code, err = run_samplers(path)
    assert code in (0, 2), err
    if code == 2:
        assert err.count("\n") == 1 and str(path) in err, err


@pytest.mark.parametrize(
    "source",
    [
        "(" * 100_000,
        "x = " + "[" * 100_000 + "]" * 100_000,
        "x = 1" + "0" * 5000,
        "raise SystemExit(3)",
        "raise KeyboardInterrupt",
        "raise RecursionError('deep')",
        "def f(): f()\nf()",
        "SAMPLER = 3",
        "class SAMPLER: pass",
        "\x00",
        "\ufeffSAMPLER = None",
    ],
    ids=["parens", "nested-list", "huge-int", "exit", "interrupt", "recursion", "overflow",
         "not-a-class", "no-interface", "nul", "bom"],
)  # fmt: skip
def test_hostile_plugin_sources_are_one_line(work: Path, source: str) -> None:
    path = work / "hostile.py"
    path.write_text(source, encoding="utf-8")
    code, err = run_samplers(path)
    assert code == 2 and err.count("\n") == 1 and str(path) in err, err


@pytest.mark.parametrize(
    ("specs", "said"),
    [
        ([("bonus", ""), ("bonus", "")], "setting 'bonus' is declared twice"),
        ([("bonus", "short_key='c'"), ("c", "")], "settings 'bonus' and 'c' both use 'c'"),
        ([("bonus", "short_flag='-b'"), ("c", "short_flag='-b'")], "'bonus' and 'c' both use '-b'"),
    ],
)
def test_two_settings_of_one_plugin_may_not_share_a_name_key_or_flag(
    work: Path, specs: list[tuple[str, str]], said: str
) -> None:
    path = work / "twice.py"
    declared = [
        f"SettingSpec({name!r}, 'float', default=0.0, off=0.0, label='b', help='h',"
        f" group='bonus', {extra})"
        for name, extra in specs
    ]
    path.write_text(plugin_source("fuzzed", declared, None), encoding="utf-8")
    code, err = run_samplers(path)
    assert code == 2 and said in err and err.count("\n") == 1, err
