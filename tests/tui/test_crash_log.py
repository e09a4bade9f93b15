"""An error nobody foresaw in the app: its traceback goes to the errors log. One in a
handler, a reply's job or the chat's handling of its events is a notice saying where,
and the chat goes on; a widget that cannot mount ends the app with one line saying
where (the chat is saved as it goes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Static

from backend.chat.events import GenerationEvent, TokenEvent
from tests.fake_backend import FakeBackend
from tests.helpers import send_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.conversation import Conversation
from tui.chat.screen import ChatScreen
from tui.chat.view import ChatView

pytestmark = pytest.mark.anyio


async def test_an_unexpected_error_is_logged_and_told_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path / "logs"))
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)

    class Broken(Static):
        def on_mount(self) -> None:  # a widget that cannot mount is not there to go on
            raise RuntimeError("nobody saw this coming")

    with pytest.raises(RuntimeError, match="nobody saw"):
        async with app.run_test(size=(100, 30)) as pilot:
            app.call_later(app.mount, Broken())
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
        await wait_until(pilot, lambda: bool(app._notifications))  # a notice is a message
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


@pytest.mark.handler_errors
async def test_an_error_in_a_handler_is_a_notice_and_the_app_and_its_chat_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Textual ends the app when a handler raises (and stops the message loop of the
    # widget that raised); samplescope's app logs it, says so, and goes on.
    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path / "logs"))
    app = SamplescopeApp(FakeBackend(), max_tokens=6, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        first = await send_message(pilot, app, "hello")
        before = list(app.chat.conversation.messages)

        def seed_trips(self: ChatScreen) -> None:
            raise RuntimeError("the seed tripped")

        monkeypatch.setattr(ChatScreen, "action_new_seed", seed_trips)  # the screen's action
        await pilot.press("ctrl+g")
        await pilot.pause()
        asks = Conversation.ask

        def ask_trips(self: Conversation, text: str) -> None:
            raise ValueError("the prompt tripped")

        monkeypatch.setattr(Conversation, "ask", ask_trips)  # in the chat view's handler
        prompt = app.query_one("#prompt", Input)
        prompt.value = "this one trips"
        await prompt.action_submit()
        await wait_until(pilot, lambda: len(app._notifications) == 2)
        assert app.is_running
        log = tmp_path / "logs" / "errors.log"
        assert [n.message for n in app._notifications] == [
            f"unexpected error: RuntimeError: the seed tripped (the traceback is in {log});"
            " the chat goes on",
            f"unexpected error: ValueError: the prompt tripped (the traceback is in {log});"
            " the chat goes on",
        ]
        logged = log.read_text(encoding="utf-8")
        assert 'raise RuntimeError("the seed tripped")' in logged
        assert 'raise ValueError("the prompt tripped")' in logged
        assert app.chat.conversation.messages == before
        assert first.text in [str(m.content) for m in before]
        monkeypatch.setattr(Conversation, "ask", asks)
        again = await send_message(pilot, app, "once more")  # the chat view still listens
        assert again.reason == "max_tokens" and again.text
        assert len(app.chat.conversation.messages) == len(before) + 2
    assert app.return_code in (0, None)
