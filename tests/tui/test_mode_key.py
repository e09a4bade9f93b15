"""f6 switches the chat between chat mode and completion mode, with a notice."""

from __future__ import annotations

import pytest

from tests.fake_backend import FakeBackend
from tests.helpers import send_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.mode_switch import MODE_NOTICES

pytestmark = pytest.mark.anyio


async def test_f6_switches_between_chat_and_completion_mode() -> None:
    app = SamplescopeApp(FakeBackend(), max_tokens=4, cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: app.ready)
        assert app.conversation.mode == "chat"
        await pilot.press("f6")
        assert app.conversation.mode == "completion"
        assert MODE_NOTICES["completion"] in [n.message for n in app._notifications]
        finished = await send_message(pilot, app, "the cat")
        assert finished.reason in ("eos", "max_tokens")
        await pilot.press("f6")
        assert app.conversation.mode == "chat"
        assert MODE_NOTICES["chat"] in [n.message for n in app._notifications]
