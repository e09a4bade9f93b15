"""Undecodable arguments and stdin, and a huge --draws: one-line errors, never tracebacks."""

from __future__ import annotations

import io
import os
import sys

import pytest

from tui.cli.main import main
from tui.cli.text_input import TextInputError, read_stdin

# What Python makes of the bytes b"\xff hi" in argv (surrogateescape).
UNDECODABLE = os.fsdecode(b"\xff hi")


@pytest.mark.parametrize(
    "argv",
    [
        ["encode", UNDECODABLE],
        ["generate", UNDECODABLE, "--max-tokens", "1"],
        ["dist", "--logits", UNDECODABLE],
        ["--model", UNDECODABLE],
    ],
    ids=lambda argv: argv[0],
)
def test_an_argument_that_is_not_utf8_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    position = argv.index(UNDECODABLE) + 1
    assert (
        err == f"samplescope: argument {position} is not valid UTF-8 (byte 0xff at character 0)\n"
    )


class _BytesStdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def test_stdin_that_is_not_utf8_is_an_error_with_its_offset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", _BytesStdin(b"caf\xc3\xa9 \xfe!"))
    with pytest.raises(TextInputError, match=r"stdin is not valid UTF-8 \(byte 0xfe at offset 6\)"):
        read_stdin()


def test_stdin_in_utf8_is_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _BytesStdin("café\n€".encode()))
    assert read_stdin() == "café\n€"


def test_encode_reads_undecodable_stdin_as_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", _BytesStdin(b"\xff"))
    assert main(["encode", "-"]) == 2
    assert capsys.readouterr().err == (
        "samplescope: stdin is not valid UTF-8 (byte 0xff at offset 0)\n"
    )


@pytest.mark.parametrize("draws", ["1000000000000", "10000001", "0"])
def test_dist_bounds_its_draws(capsys: pytest.CaptureFixture[str], draws: str) -> None:
    assert main(["dist", "--draws", draws]) == 2
    assert capsys.readouterr().err == (
        f"samplescope: --draws must be a positive number up to 10000000, got {draws}\n"
    )
