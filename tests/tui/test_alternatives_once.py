"""A token's alternatives open once however fast Enter is typed: a second Enter
before the first list shows asks nothing more (one screen at a time, as a value
dialog)."""

from __future__ import annotations

import pytest

from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, nth_reply_finished, type_message, wait_until
from tests.tui.test_value_dialog import type_at_once
from tui.app import SamplescopeApp
from tui.widgets.alternatives import AlternativesScreen

pytestmark = pytest.mark.anyio

SIZE = (120, 40)


def lists(app: SamplescopeApp) -> list[AlternativesScreen]:
    return [screen for screen in app.screen_stack if isinstance(screen, AlternativesScreen)]


async def test_a_double_enter_on_a_token_opens_one_alternatives_list() -> None:
    app = SamplescopeApp(FakeBackend(), max_tokens=10, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await type_message(pilot, app, "hello")
        await nth_reply_finished(pilot, app)
        await pilot.press("ctrl+t", "left")
        assert chat_of(app).cursor is not None
        type_at_once(app, "enter", "enter")
        await wait_until(pilot, lambda: bool(lists(app)))
        await pilot.pause()
        await pilot.pause()
        assert len(lists(app)) == 1
        await pilot.press("escape")
        await wait_until(pilot, lambda: not lists(app))
        await pilot.pause()
        assert not lists(app)


async def test_a_double_a_in_a_compare_column_opens_one_list() -> None:
    from tui.compare.screen import CompareScreen

    app = SamplescopeApp(FakeBackend(), max_tokens=10, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await type_message(pilot, app, "the cat sat")
        await nth_reply_finished(pilot, app)
        await pilot.press("ctrl+d")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_until(pilot, lambda: all(v.finished for v in screen.column_views))
        await pilot.press("2", "home", "right")
        type_at_once(app, "a", "a")
        await wait_until(pilot, lambda: bool(lists(app)))
        await pilot.pause()
        await pilot.pause()
        assert len(lists(app)) == 1
