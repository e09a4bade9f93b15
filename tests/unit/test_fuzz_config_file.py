"""Hostile config files: deep nesting, huge sizes, non-UTF-8, NUL, FIFOs and devices.

`load_config` returns a config or raises one `ConfigError` line naming the file,
never another exception and never a hang (the structured TOML fuzzing is in
test_fuzz_cli_config.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.config.config import Config, ConfigError, load_config
from backend.config.model_catalog import config_model_dirs
from tests.helpers import SPECIAL_FILE_KINDS, special_file

DEPTH = 100_000


@pytest.mark.parametrize(
    "data",
    [
        b"x = " + b"[" * DEPTH + b"]" * DEPTH + b"\n",
        b"[settings]\nx = " + b"{a=" * 5000 + b"1" + b"}" * 5000 + b"\n",
        b"[" + b"a." * 20_000 + b"a]\n",
        b"\xff\xfe[settings]\n",
        b"[settings]\ntemperature = 1\x00\n",
        b"[settings]\nseed = 1" + b"0" * 5000 + b"\n",
        b"[settings]\ntemperature = nan\ntop_k = inf\n",
        b"#" * (20 << 20),
        b"model = \"\x1b[31m\\u0000\"\n",
    ],
    ids=["deep-array", "deep-table", "long-dotted", "latin1", "nul", "huge-int", "nan",
         "huge", "controls"],
)  # fmt: skip
def test_a_hostile_config_file_gives_one_line(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(data)
    try:
        config = load_config(path)
    except ConfigError as error:
        assert "\n" not in str(error) and str(path) in str(error), str(error)[:300]
        return
    assert isinstance(config, Config)


@pytest.mark.parametrize("kind", SPECIAL_FILE_KINDS)
def test_a_config_path_that_is_no_file_is_refused_before_reading(tmp_path: Path, kind: str) -> None:
    path = special_file(tmp_path / "config.toml", kind)
    with pytest.raises(ConfigError, match="not a regular file") as raised:
        load_config(path)
    assert str(path) in str(raised.value)


def test_a_missing_or_dangling_config_is_the_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path / "absent.toml") == Config()
    (tmp_path / "dangling.toml").symlink_to(tmp_path / "nowhere")
    assert load_config(tmp_path / "dangling.toml") == Config()


@pytest.mark.parametrize(
    "data", [b"model_dirs = " + b"[" * DEPTH + b"]" * DEPTH, b"x = 1" + b"0" * 5000, b"\xff"]
)
def test_model_listing_reads_a_hostile_config_as_no_model_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path))
    (tmp_path / "config.toml").write_bytes(data)
    assert config_model_dirs() == ()
