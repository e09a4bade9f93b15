"""In the app, a beam search or an explored tree with guidance on is refused in one line
(the reply's error, the explore screen's status) instead of running the model's
distribution alone under settings that say otherwise (the fake backend)."""

from __future__ import annotations

import pytest
from textual.message import Message

from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, send_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.transcript import Transcript
from tui.explore.screen import ExploreScreen
from tui.panel.toggle import Toggle

pytestmark = pytest.mark.anyio

GUIDED = DEFAULT_CHAT_SETTINGS.with_changes(guidance_scale=2.0, negative_prompt="the dog")
SIZE = (120, 40)
NEEDS = "decodes one distribution per sequence, and guidance_scale 2 needs a negative prompt"


async def test_a_beam_search_with_guidance_is_a_reply_error_of_one_line() -> None:
    app = SamplescopeApp(FakeBackend(), settings=GUIDED, max_tokens=8, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        app.query_one("#toggle-beam_width", Toggle).action_cycle(1)  # off → 2
        await wait_until(pilot, lambda: chat_of(app).beam_width == 2)
        finished = await send_message(pilot, app, "the cat")
    assert finished.error == f"beam search {NEEDS} beside each (1 is off)"


async def test_exploring_with_guidance_is_refused_in_one_line() -> None:
    log: list[Message] = []
    app = SamplescopeApp(FakeBackend(), settings=GUIDED, max_tokens=8, cursor_blink=False)
    async with app.run_test(size=SIZE, message_hook=log.append) as pilot:
        await send_message(pilot, app, "the cat")
        await pilot.press("ctrl+t")
        app.query_one(Transcript).select(0, 2)
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, ExploreScreen))
        screen = app.screen
        assert isinstance(screen, ExploreScreen)
        await wait_until(pilot, lambda: any(isinstance(m, ExploreScreen.Failed) for m in log))
        [failed] = [m for m in log if isinstance(m, ExploreScreen.Failed)]
        assert failed.error == f"explore {NEEDS} beside each (1 is off)"
        assert not screen.nodes
