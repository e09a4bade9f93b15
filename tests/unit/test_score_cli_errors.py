"""`samplescope score` refuses, in one line, what it cannot read (no model loaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.cli.main import main


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read"),
        (b"", "the text is empty"),
        (b"caf\xe9", "is not valid UTF-8 (byte 0xe9 at offset 3)"),
    ],
)
def test_unscorable_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, expected: str
) -> None:
    path = tmp_path / "text.txt"
    if content is not None:
        path.write_bytes(content)
    assert main(["score", str(path), "--model", str(tmp_path / "absent.gguf")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and expected in error, error


def test_a_folder_is_unreadable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(tmp_path)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_stdin_is_read_and_checked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff")))
    assert main(["score", "-"]) == 2
    assert "stdin is not valid UTF-8" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    assert main(["score", "-"]) == 2
    assert "the text is empty" in capsys.readouterr().err
