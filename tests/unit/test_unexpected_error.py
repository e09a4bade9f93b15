"""An error nobody foresaw ends a command with one line naming where its traceback was
logged, never a traceback on the terminal."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tui.cli.main import main


def test_an_unexpected_error_is_one_line_and_its_traceback_is_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))

    def broken(args: argparse.Namespace) -> int:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("tui.cli.commands.samplers.run", broken)
    assert main(["samplers"]) == 1
    err = capsys.readouterr().err
    log = tmp_path / "logs" / "errors.log"
    assert err == (
        f"samplescope: unexpected error: RuntimeError: boom second line (the traceback is in"
        f" {log})\n"
    )
    logged = log.read_text(encoding="utf-8")
    assert "samplescope samplers" in logged and 'raise RuntimeError("boom' in logged


def test_an_interrupt_is_exit_code_130_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))

    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr("tui.cli.commands.samplers.run", interrupted)
    assert main(["samplers"]) == 130
    assert capsys.readouterr().err == ""
