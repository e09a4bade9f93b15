"""An error nobody foresaw in the app: its traceback goes to the errors log and the app
ends with one line saying where (the chat is saved as it goes); one in a reply's job or
in the chat's handling of its events is a notice saying where, and the chat goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.chat.events import GenerationEvent, TokenEvent
from tests.fake_backend import FakeBackend
from tests.helpers import send_message
from tui.app import SamplescopeApp
from tui.chat.view import ChatView

pytestmark = pytest.mark.anyio


async def test_an_unexpected_error_is_logged_and_told_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path / "logs"))
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)

    def broken() -> None:
        raise RuntimeError("nobody saw this coming")

    with pytest.raises(RuntimeError, match="nobody saw"):
        async with app.run_test(size=(100, 30)) as pilot:
            app.call_later(broken)
            await pilot.pause()
    log = tmp_path / "logs" / "errors.log"
    assert app._crash_line == (
        "samplescope: unexpected error: RuntimeError: nobody saw this coming (the traceback"
        f" is in {log}; the chat is saved)"
    )
    assert 'raise RuntimeError("nobody saw this coming")' in log.read_text(encoding="utf-8")
    assert app.return_code == 1


async def test_an_error_handling_a_replys_events_is_a_notice_and_the_chat_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path / "logs"))
    shown = ChatView.generation_event

    def broken(self: ChatView, column: int, event: GenerationEvent) -> None:
        if isinstance(event, TokenEvent) and event.index == 2:
            raise RuntimeError("the view tripped")
        shown(self, column, event)

    monkeypatch.setattr(ChatView, "generation_event", broken)
    app = SamplescopeApp(FakeBackend(), max_tokens=6, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        ended = await send_message(pilot, app, "hello")
        log = tmp_path / "logs" / "errors.log"
        line = f"unexpected error: RuntimeError: the view tripped (the traceback is in {log})"
        assert ended.reason == "error" and ended.error == line
        assert [n.message for n in app._notifications] == [f"{line}; the chat goes on"]
        assert 'raise RuntimeError("the view tripped")' in log.read_text(encoding="utf-8")
        monkeypatch.setattr(ChatView, "generation_event", shown)
        again = await send_message(pilot, app, "once more")
        assert again.reason == "max_tokens" and again.text
    assert app.return_code in (0, None)


async def test_an_error_in_a_replys_job_is_a_notice_and_the_chat_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path / "logs"))
    backend = FakeBackend()
    works = backend.generate

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("the job tripped")

    monkeypatch.setattr(backend, "generate", broken)
    app = SamplescopeApp(backend, max_tokens=6, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        ended = await send_message(pilot, app, "hello")
        log = tmp_path / "logs" / "errors.log"
        line = f"unexpected error: RuntimeError: the job tripped (the traceback is in {log})"
        assert ended.reason == "error" and ended.error == line
        assert line in [str(note.content) for note in app.query("#transcript .note")]
        monkeypatch.setattr(backend, "generate", works)
        again = await send_message(pilot, app, "once more")
        assert again.reason == "max_tokens" and again.text
    assert app.return_code in (0, None)
