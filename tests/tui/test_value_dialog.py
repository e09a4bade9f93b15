"""A slider's value dialog opens once however fast Enter is typed, takes the keys
typed while it shows, and writes nothing when kept as shown."""

from __future__ import annotations

from typing import Any

import pytest
from textual import events

from tests.helpers import wait_until
from tests.tui.test_tui_snapshots import SIZE, fake_backend, make_app
from tui.app import SamplescopeApp
from tui.panel.slider import Slider
from tui.widgets.entry import ValueEntryScreen

pytestmark = pytest.mark.anyio


def type_at_once(app: SamplescopeApp, *keys: str) -> None:
    """Queue `keys` in one go, as a fast typist's terminal sends them."""
    for key in keys:
        character = key if len(key) == 1 else None
        app.post_message(events.Key(key, character))


def dialogs(app: SamplescopeApp) -> list[ValueEntryScreen]:
    return [screen for screen in app.screen_stack if isinstance(screen, ValueEntryScreen)]


def count_dialogs(app: SamplescopeApp) -> list[ValueEntryScreen]:
    """Record every value dialog the app is asked to show."""
    pushed: list[ValueEntryScreen] = []
    push = app.push_screen

    def counted(screen: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(screen, ValueEntryScreen):
            pushed.append(screen)
        return push(screen, *args, **kwargs)

    app.push_screen = counted  # type: ignore[method-assign]
    return pushed


async def test_keys_typed_at_once_after_enter_go_into_the_one_dialog() -> None:
    app = make_app(fake_backend())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")  # the first slider: temperature
        await pilot.pause()
        assert isinstance(app.focused, Slider) and app.focused.field == "temperature"
        pushed = count_dialogs(app)
        type_at_once(app, "enter", "1", ".", "2", "5", "enter")
        await wait_until(pilot, lambda: app.live.current.temperature == 1.25)
        await pilot.pause()
        assert len(pushed) == 1 and not dialogs(app)


async def test_a_double_enter_opens_one_dialog_and_writes_nothing() -> None:
    app = make_app(fake_backend())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")
        await pilot.pause()
        pushed = count_dialogs(app)
        type_at_once(app, "enter", "enter")  # the second confirms the value as shown
        await wait_until(pilot, lambda: len(pushed) == 1 and not dialogs(app))
        await pilot.pause()
        assert len(pushed) == 1 and app.live.current.temperature == 0.8
        assert isinstance(app.focused, Slider)


async def test_a_dialog_kept_as_shown_writes_nothing() -> None:
    app = make_app(fake_backend())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")
        await pilot.pause()
        type_at_once(app, "enter")
        await wait_until(pilot, lambda: bool(dialogs(app)))
        await pilot.pause()
        # Meanwhile the temperature changes elsewhere (a preset, the palette): the
        # dialog, confirmed unchanged, does not put back the value it showed.
        app.apply_setting("temperature", 0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: not dialogs(app))
        assert app.live.current.temperature == 0.3


async def test_a_value_with_brackets_is_told_as_text() -> None:
    """The notice quoting a bad value shows it literally: read as markup, "[/]" stopped
    the app when the notice was drawn. Every notice of the app is text."""
    app = make_app(fake_backend())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")
        await pilot.pause()
        type_at_once(app, "enter", "[", "/", "]", "enter")
        await wait_until(pilot, lambda: any("[/]" in n.message for n in app._notifications))
        assert all(not n.markup for n in app._notifications)
