"""Completion mode: f6 switches to it and back, and compare continues the document too."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.loop import Generation
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, send_message, wait_done, wait_until
from tui.app import SamplescopeApp
from tui.chat.mode_switch import MODE_NOTICES
from tui.compare.command import open_compare
from tui.compare.screen import CompareScreen

pytestmark = pytest.mark.anyio


async def test_f6_switches_between_chat_and_completion_mode() -> None:
    app = SamplescopeApp(FakeBackend(), max_tokens=4, cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        assert app.conversation.mode == "chat"
        await pilot.press("f6")
        assert app.conversation.mode == "completion"
        assert MODE_NOTICES["completion"] in [n.message for n in app._notifications]
        finished = await send_message(pilot, app, "the cat")
        assert finished.reason in ("eos", "max_tokens")
        await pilot.press("f6")
        assert app.conversation.mode == "chat"
        assert MODE_NOTICES["chat"] in [n.message for n in app._notifications]


class PromptRecorder(FakeBackend):
    """A fake that records what each generation was given: (messages, raw)."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[tuple[list[ChatMessage], bool]] = []

    def generate_many(  # type: ignore[override]
        self, messages: Sequence[ChatMessage], lives: Sequence[LiveSettings], **kwargs: Any
    ) -> Generation:
        for _ in lives:  # one prompt per sequence
            self.prompts.append((list(messages), bool(kwargs.get("raw", False))))
        return super().generate_many(messages, lives, **kwargs)


async def test_compare_in_completion_mode_continues_the_document_as_the_reply_does() -> None:
    fake = PromptRecorder()
    app = SamplescopeApp(fake, max_tokens=4, cursor_blink=False, mode="completion")
    async with app.run_test(size=(120, 36)) as pilot:
        await send_message(pilot, app, "Once upon a time")
        assert app.conversation.mode == "completion"
        reply_prompt = fake.prompts[-1]
        assert reply_prompt == ([ChatMessage("user", "Once upon a time")], True)
        screen = open_compare(app)
        assert isinstance(screen, CompareScreen)
        await wait_done(pilot, screen)
        columns = fake.prompts[1:]
        assert len(columns) == len(screen.columns) >= 2
        assert all(prompt == reply_prompt for prompt in columns)
