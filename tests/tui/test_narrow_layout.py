"""A narrow terminal folds the panels: the chat keeps the width (at least half), f10
shows the panels over it and folds them again; a wide one has them beside the chat."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from tests.helpers import chat_of, wait_until
from tests.tui.test_tui_snapshots import TOP_P_SETTINGS, fake_backend, make_app, send
from tui.app import SamplescopeApp
from tui.chat.transcript import Transcript

NARROW = (80, 24)


@pytest.mark.anyio
@pytest.mark.parametrize("size", [NARROW, (100, 30)])
async def test_a_narrow_terminal_folds_the_panels_and_f10_shows_them_over_the_chat(
    size: tuple[int, int],
) -> None:
    app = make_app(fake_backend())
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        transcript = app.query_one(Transcript)
        panels = app.query_one("#right")
        width = transcript.outer_size.width
        assert width >= size[0] // 2 and not panels.display
        assert app.chat_screen.check_action("toggle_panels", ()) is True
        await pilot.press("f10")
        await pilot.pause()
        assert panels.display and panels.region.width > 0
        assert panels.region.overlaps(transcript.region)  # over the chat, not beside it
        assert transcript.outer_size.width == width
        await pilot.press("f10")
        await pilot.pause()
        assert not panels.display
        await pilot.press("f2")  # the sliders: the panels show, the first one focused
        await pilot.pause()
        assert panels.display and app.focused is not None and panels in app.focused.ancestors
        await pilot.press("f10")  # folded: the focus goes back to the message box
        await pilot.pause()
        assert not panels.display and app.focused is app.query_one("#prompt")


@pytest.mark.anyio
async def test_a_wide_terminal_has_the_panels_beside_the_chat_and_no_f10() -> None:
    app = make_app(fake_backend())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        transcript = app.query_one(Transcript)
        panels = app.query_one("#right")
        assert panels.display and not panels.region.overlaps(transcript.region)
        assert transcript.outer_size.width >= 80
        assert app.chat_screen.check_action("toggle_panels", ()) is False


async def _reply_then_cursor(pilot: Pilot[object], app: SamplescopeApp) -> None:
    await send(pilot, app, "hello there")
    await wait_until(
        pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
    )
    await pilot.press("ctrl+t", "left")
    await wait_until(pilot, lambda: chat_of(app).cursor is not None)
    await pilot.pause()


def test_narrow_token_cursor_and_its_footer(snap_compare: object) -> None:
    """80x24: the chat takes the width; the footer's labels stand apart ("token ⏎ alts",
    "branch u parent") and end at the palette key, nothing after it."""
    app = make_app(fake_backend(), max_tokens=30, settings=TOP_P_SETTINGS)

    async def cursor(pilot: Pilot[object]) -> None:
        await _reply_then_cursor(pilot, app)

    assert snap_compare(app, terminal_size=NARROW, run_before=cursor)  # type: ignore[operator]


def test_narrow_panels_shown_over_the_chat(snap_compare: object) -> None:
    app = make_app(fake_backend(), max_tokens=30, settings=TOP_P_SETTINGS)

    async def panels(pilot: Pilot[object]) -> None:
        await _reply_then_cursor(pilot, app)
        await pilot.press("f10")
        await pilot.pause()

    assert snap_compare(app, terminal_size=NARROW, run_before=panels)  # type: ignore[operator]


@pytest.mark.anyio
async def test_what_if_on_a_narrow_terminal_says_where_it_shows() -> None:
    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    told: list[str] = []
    async with app.run_test(size=NARROW) as pilot:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        app.notify = lambda message, **_: told.append(message)  # type: ignore[method-assign]
        await pilot.press("ctrl+t", "left", "w")
        await wait_until(pilot, lambda: chat_of(app).whatif.active)
        assert any("f10" in message for message in told)  # the panels are folded
        await pilot.press("f10", "w", "w")  # shown: nothing more to say
        await wait_until(pilot, lambda: chat_of(app).whatif.active)
        assert sum("f10" in message for message in told) == 1
