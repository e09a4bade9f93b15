"""Fuzzing the front door: every command's parser and the config loader on hostile input.

A parser either accepts the words or exits with code 2 and an argparse message (no
traceback); accepted sampler flags build settings or raise the project's one-line
error. The config loader returns a config or raises `ConfigError`. Examples per run
come from the hypothesis profile (tests/conftest.py).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.config.config import Config, ConfigError, load_config
from sampling.built_in import BUILT_IN_REGISTRY, DEFAULT_CHAT_SETTINGS
from sampling.errors import SamplescopeError
from tui.cli.main import build_parser
from tui.cli.options.settings import settings_from_args

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

COMMANDS = [
    "dist",
    "bench",
    "history",
    "replay",
    "export",
    "config",
    "info",
    "encode",
    "generate",
    "compare",
    "fwd",
    "rpc-server",
]
FLAGS = [spec.flag for spec in BUILT_IN_REGISTRY.settings] + [
    "--model",
    "--threads",
    "--ctx",
    "--batch",
    "--draws",
    "--logits",
    "--set",
    "--preset",
    "--json",
    "--max-tokens",
    "-t",
    "-k",
    "-p",
    "-s",
    "-v",
    "--",
]
HOSTILE = [
    "",
    "-",
    "nan",
    "inf",
    "-inf",
    "1e400",
    "-1e-300",
    "10" * 30,
    "0x10",
    "\x00",
    "\x1b[31m",
    "<|im_end|>",
    "k=",
    "=",
    "t=nan,k=-1",
    "'",
    '"',
    "\udcff",
]
words = st.one_of(st.sampled_from(FLAGS), st.sampled_from(HOSTILE), st.text(max_size=12))


@HEALTH
@given(st.sampled_from(COMMANDS), st.lists(words, max_size=8))
def test_every_parser_accepts_or_exits_with_usage(command: str, argv: list[str]) -> None:
    parser = build_parser()
    try:
        args = parser.parse_args([command, *argv])
    except SystemExit as exit_:
        assert exit_.code in (0, 2)
        return
    assert isinstance(args, argparse.Namespace)
    if any(hasattr(args, spec.name) for spec in BUILT_IN_REGISTRY.settings):
        try:
            settings_from_args(args, DEFAULT_CHAT_SETTINGS)
        except SamplescopeError as error:
            assert "\n" not in str(error)


@pytest.fixture(scope="module")
def config_folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="samplescope-fuzz-config-"))


toml_value = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda x: repr(x).replace("inf", "inf")),
    st.text(max_size=8).map(lambda text: '"' + text.replace("\\", "").replace('"', "") + '"'),
    st.sampled_from(["true", "false", "[]", "[1, 2]", "{}", "{ a = 1 }", "1979-05-27", "nan"]),
)
toml_key = st.one_of(
    st.sampled_from(
        [spec.name for spec in BUILT_IN_REGISTRY.settings] + ["model", "theme", "rpc", "keys"]
    ),
    st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
)
toml_line = st.one_of(
    st.builds(lambda key, value: f"{key} = {value}", toml_key, toml_value),
    st.sampled_from(["[settings]", "[keys]", "[rpc]", "[[settings]]", "[settings.x]", "["]),
    st.text(max_size=20),
)


@HEALTH
@given(st.lists(toml_line, max_size=8))
def test_the_config_loader_returns_a_config_or_a_config_error(
    config_folder: Path, lines: list[str]
) -> None:
    path = config_folder / "config.toml"
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    try:
        config = load_config(path)
    except ConfigError as error:
        assert "\n" not in str(error)
        return
    assert isinstance(config, Config)
