"""Keys typed straight after one that moves the focus reach the newly focused control.

Pilot waits between keys until the process looks idle (little CPU time used while it
sleeps); on a loaded machine that ends before the app handled the key, which is what
made a snapshot fail now and then. Here that wait is gone altogether: every key is
queued before the app handles the first, as when a user types ahead, so a focus that
moves only after the messages already queued (Textual's `Widget.focus()`) would send
the keys after it elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import textual.app

from backend.chat.protocol import ChatMessage
from tests.fake_backend import FakeBackend
from tests.helpers import HostApp, chat_of, wait_done, wait_until
from tests.tui.test_tui_snapshots import SIZE, TOP_P_SETTINGS, fake_backend, make_app, send
from tui.compare.screen import CompareScreen
from tui.panel.sampling_panel import SamplingPanel

pytestmark = pytest.mark.anyio
HELLO = [ChatMessage("user", "hello there")]


@pytest.fixture
def no_idle_wait(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Pilot sends each key without waiting for the app to handle the one before."""

    async def at_once(min_sleep: float = 0.0, max_sleep: float = 1.0) -> None:
        """Return without yielding to the loop: every key is queued before any is handled."""

    monkeypatch.setattr(textual.app, "wait_for_idle", at_once)
    yield


async def test_arrows_straight_after_ctrl_t_move_the_token_cursor(no_idle_wait: None) -> None:
    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        last = len(chat_of(app).conversation.replies[-1].tokens) - 1
        await pilot.press("ctrl+t", "left", "left", "left")
        await wait_until(pilot, lambda: chat_of(app).cursor == (0, last - 3), timeout=10)


async def test_keys_straight_after_f2_go_to_the_first_slider(no_idle_wait: None) -> None:
    app = make_app(fake_backend())
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        temperature = app.live.current.temperature
        await pilot.press("f2", "left")
        await wait_until(pilot, lambda: app.live.current.temperature < temperature, timeout=10)
        assert app.query_one(SamplingPanel) in app.focused.ancestors  # type: ignore[union-attr]


async def test_an_arrow_straight_after_a_column_key_selects_in_that_column(
    no_idle_wait: None,
) -> None:
    app = HostApp(lambda: CompareScreen(FakeBackend(), HELLO, [TOP_P_SETTINGS] * 2, 3))
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        await pilot.press("2", "right")
        views = screen.column_views
        await wait_until(pilot, lambda: views[1].cursor is not None, timeout=10)
        assert views[0].cursor is None


async def test_a_letter_straight_after_ctrl_t_reaches_the_token_cursor(no_idle_wait: None) -> None:
    """`w` typed straight after ctrl+t opens what-if rather than landing in the message
    box (which takes a letter itself, so it never bubbles to the token cursor's keys)."""
    from textual.widgets import Input

    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        await pilot.press("ctrl+t", "home", "w")
        await wait_until(pilot, lambda: chat_of(app).whatif.active, timeout=10)
        assert chat_of(app).whatif.target == (0, 0)
        assert app.query_one("#prompt", Input).value == ""
