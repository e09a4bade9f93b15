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


def test_an_unforeseen_error_in_the_generation_loop_ends_the_reply_and_is_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backend.chat.events import FinishedEvent, TokenEvent
    from backend.chat.protocol import ChatMessage, LiveSettings
    from backend.session.run import LoopSequence
    from sampling.settings.record import SamplerSettings
    from tests.fake_backend import FakeBackend

    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path / "logs"))
    sample = LoopSequence.sample

    def trips_at_3(self: LoopSequence, *args: object, **kwargs: object) -> object:
        if self.index == 3:
            raise KeyError("a bug in the loop")
        return sample(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(LoopSequence, "sample", trips_at_3)
    events = list(
        FakeBackend(min_reply_tokens=10).generate(
            [ChatMessage("user", "hi")],
            LiveSettings(SamplerSettings(temperature=0.0)),
            max_tokens=10,
        )
    )
    end = events[-1]
    log = tmp_path / "logs" / "errors.log"
    assert isinstance(end, FinishedEvent) and end.reason == "error"
    assert end.error == (
        f"unexpected error: KeyError: 'a bug in the loop' (the traceback is in {log})"
    )
    assert len([e for e in events if isinstance(e, TokenEvent)]) == 3  # the reply so far
    assert 'raise KeyError("a bug in the loop")' in log.read_text(encoding="utf-8")
