"""One rule for reading the user's files: FIFOs, devices and folders refused before a
read, a size limit, UTF-8 checked naming the byte, JSON and YAML nesting bounded, and
a YAML alias bomb refused; presets, sampler files, grammar files and score go through
it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend.config.preset_files import read_preset_file
from backend.config.preset_interchange import PresetFormatError
from backend.config.sampler_files import load_sampler_file
from backend.config.user_files import (
    MAX_DEPTH,
    UserFileError,
    load_json,
    load_yaml,
    read_user_bytes,
    read_user_text,
)
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.plugins import PluginError
from tui.cli.main import main

BOMB = "\n".join(
    ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    + [
        f"{chr(98 + n)}: &{chr(98 + n)} [" + ", ".join([f"*{chr(97 + n)}"] * 10) + "]"
        for n in range(8)
    ]
)


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_a_fifo_a_device_and_a_folder_are_refused_before_any_read(
    fifo: Path, tmp_path: Path
) -> None:
    # A FIFO with no writer would block a read forever: run it on a thread, bounded.
    result: list[BaseException] = []
    reader = threading.Thread(target=lambda: _catch(result, fifo), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive() and "a FIFO, not a regular file" in str(result[0])
    with pytest.raises(UserFileError, match="a device, not a regular file"):
        read_user_bytes(Path("/dev/zero"))
    with pytest.raises(UserFileError, match="a directory, not a regular file"):
        read_user_bytes(tmp_path)
    with pytest.raises(UserFileError, match=r"cannot read .*: No such file"):
        read_user_bytes(tmp_path / "absent")


def _catch(result: list[BaseException], path: Path) -> None:
    try:
        read_user_bytes(path)
    except UserFileError as error:
        result.append(error)


def test_a_file_over_the_limit_is_refused_and_bytes_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"x" * 1001)
    with pytest.raises(UserFileError, match="larger than 1,000 bytes"):
        read_user_bytes(path, 1000)
    assert read_user_bytes(path, 1001) == b"x" * 1001
    path.write_bytes("héllo".encode() + b"\xff rest")
    with pytest.raises(UserFileError, match=r"f\.txt is not valid UTF-8 \(byte 0xff at offset 6\)"):
        read_user_text(path)


def test_nesting_beyond_the_depth_limit_is_refused() -> None:
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "f") is not None
    for depth in (MAX_DEPTH + 2, 100_000):
        with pytest.raises(UserFileError, match=f"f: nested deeper than {MAX_DEPTH} levels"):
            load_json("[" * depth + "]" * depth, "f")
        with pytest.raises(UserFileError, match=f"y: .*nested deeper than {MAX_DEPTH} levels"):
            load_yaml("[" * depth + "]" * depth, "y")


def test_a_yaml_alias_bomb_is_refused_and_yaml_is_safe() -> None:
    with pytest.raises(UserFileError, match="expands to more than 100,000 values"):
        load_yaml(BOMB, "bomb.yaml")
    with pytest.raises(UserFileError, match="not valid YAML"):
        load_yaml("!!python/object/apply:os.system ['true']", "evil.yaml")


@given(st.binary(max_size=300))
def test_random_bytes_as_json_or_yaml_end_in_a_value_or_one_error(data: bytes) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    for load in (load_json, load_yaml):
        try:
            load(text, "f")
        except UserFileError as error:
            assert "\n" not in str(error)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "is not valid UTF-8 (byte 0x89 at offset 0)"),
        (b"[" * 5000 + b"]" * 5000, "nested deeper than"),
        (BOMB.encode(), "expands to more than"),
        (b'{"temp": ' + b"[" * 100 + b"]" * 100 + b"}", "nested deeper than"),
    ],
)
def test_a_hostile_preset_is_one_error_naming_the_file(
    tmp_path: Path, content: bytes, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    suffix = ".yaml" if content == BOMB.encode() else ".json"
    path = tmp_path / f"preset{suffix}"
    path.write_bytes(content)
    with pytest.raises(PresetFormatError, match=str(path)) as caught:
        read_preset_file(path)
    assert words in str(caught.value) and "\n" not in str(caught.value)
    assert main(["preset", "import", str(path), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err


def test_fifos_and_devices_are_refused_by_every_reader(
    fifo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(PresetFormatError, match="not a regular file"):
            read_preset_file(path)
        with pytest.raises(PluginError, match="not a regular file"):
            load_sampler_file(path, BUILT_IN_REGISTRY)
        assert main(["score", str(path)]) == 2
        assert "not a regular file" in capsys.readouterr().err
    assert main(["generate", "hi", "--grammar-file", "/dev/zero"]) == 2
    assert "not a regular file" in capsys.readouterr().err
