"""Snapshot of the what-if panel on the fake backend (fixed size, no clocks)."""

from __future__ import annotations

from textual.pilot import Pilot

from tests.helpers import chat_of, wait_until
from tests.tui.test_tui_snapshots import SIZE, TOP_P_SETTINGS, fake_backend, make_app, send
from tui.panel.slider import Slider


def test_whatif_with_top_k_moved(snap_compare: object) -> None:
    fake = fake_backend()
    app = make_app(fake, max_tokens=30, settings=TOP_P_SETTINGS)

    async def whatif(pilot: Pilot[object]) -> None:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        await pilot.press("ctrl+t", "left", "left", "left", "left", "left", "w")
        last = len(chat_of(app).conversation.replies[-1].tokens) - 1
        await wait_until(pilot, lambda: chat_of(app).whatif.target == (0, last - 5))
        await wait_until(pilot, lambda: chat_of(app).whatif.step is not None)
        app.query_one("#slider-top_k", Slider).focus()
        await pilot.press("right", "right", "right")
        await wait_until(pilot, lambda: app.live.current.top_k == 3)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=whatif)  # type: ignore[operator]
