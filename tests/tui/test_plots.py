"""The chat's plots: the reply timeline and the tail plot, on the fake backend."""

from __future__ import annotations

import numpy as np
import pytest
from textual.pilot import Pilot

from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.helpers import chat_of, wait_until
from tests.tui.test_tui_snapshots import fake_backend, make_app, send
from tui.app import SamplescopeApp
from tui.chat.tail_plot import TAIL_RANKS, TailPlot
from tui.chat.timeline import CHANGE_MARK, ReplyTimeline, bucket_bounds, spikes

pytestmark = pytest.mark.anyio

SIZE = (120, 36)
SMALL = (80, 24)
SPIKE = 9
"""The reply token whose logits are flat (`FakeBackend.flat_at`)."""
TOP_K_7 = DEFAULT_CHAT_SETTINGS.with_changes(top_k=7, top_p=1.0, min_p=0.0)


async def _reply(pilot: Pilot[object], app: SamplescopeApp, *keys: str) -> None:
    """Show the plots (`keys`), send a message, wait for the whole reply."""
    await pilot.press(*keys)
    await send(pilot, app, "hello cat")
    await wait_until(
        pilot,
        lambda: (
            bool(chat_of(app).conversation.replies)
            and bool(chat_of(app).conversation.replies[-1].finished)
        ),
    )
    chat_of(app).flush_now()
    await pilot.pause()


def test_buckets_keep_the_spike() -> None:
    values = np.full(1000, 0.5)
    values[617] = 3.0
    values[618] = 0.01
    bounds = bucket_bounds(1000, 50)
    assert len(bounds) == 51 and bounds[0] == 0 and bounds[-1] == 1000
    assert 617 in spikes(values, bounds, lowest=False)
    assert 618 in spikes(values, bounds, lowest=True)
    assert list(bucket_bounds(5, 50)) == [0, 1, 2, 3, 4, 5]  # one column per token


async def test_clicking_the_timeline_selects_that_token() -> None:
    app = make_app(fake_backend(), max_tokens=30)
    async with app.run_test(size=SIZE) as pilot:
        await _reply(pilot, app, "f4")
        timeline = app.query_one(ReplyTimeline)
        assert timeline.columns == list(range(30))
        x = timeline.x_of(SPIKE)
        assert x is not None and x >= SPIKE
        await pilot.click("#timeline-entropy", offset=(x, 0))
        await pilot.pause()
        assert chat_of(app).cursor == (0, SPIKE)
        assert (
            chat_of(app).query_one("#probs").step
            is chat_of(app).conversation.replies[0].tokens[SPIKE].step
        )  # type: ignore[attr-defined]
        assert timeline.cursor == SPIKE


async def test_moving_the_token_cursor_moves_the_marker() -> None:
    app = make_app(fake_backend(), max_tokens=30)
    async with app.run_test(size=SIZE) as pilot:
        await _reply(pilot, app, "f4")
        await pilot.press("ctrl+t", "left", "left", "left")
        await pilot.pause()
        timeline = app.query_one(ReplyTimeline)
        assert chat_of(app).cursor == (0, 26)
        assert timeline.cursor == 26
        assert timeline.column_of(26) == 26
        assert app.query_one("#timeline-marks").render().plain.index("▲") == timeline.x_of(26)
        await pilot.press("escape", "ctrl+n")
        await pilot.pause()
        assert timeline.reply_number is None and timeline.columns == []


async def test_a_setting_changed_mid_reply_is_marked() -> None:
    fake = fake_backend(pause_after_tokens=12)
    app = make_app(fake, max_tokens=30)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f4")
        await send(pilot, app, "hello cat")
        await wait_until(pilot, fake.paused.is_set)
        await wait_until(pilot, lambda: len(chat_of(app).conversation.replies[-1].tokens) == 12)
        app.live.current = app.live.current.with_changes(temperature=1.3)
        fake.resume.set()
        await wait_until(pilot, lambda: bool(chat_of(app).conversation.replies[-1].finished))
        chat_of(app).flush_now()
        await pilot.pause()
        timeline = app.query_one(ReplyTimeline)
        marks = app.query_one("#timeline-marks").render().plain
        assert [x for x, mark in enumerate(marks) if mark == CHANGE_MARK] == [timeline.x_of(12)]


async def test_the_tail_records_deeper_ranks_only_while_shown() -> None:
    app = make_app(fake_backend(), max_tokens=14, settings=TOP_K_7)
    async with app.run_test(size=SIZE) as pilot:
        await _reply(pilot, app)
        assert chat_of(app).conversation.replies[0].tokens[-1].step.tail is None
        await pilot.press("f5")
        assert app.live.tail_ranks == TAIL_RANKS
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: bool(chat_of(app).conversation.replies[-1].finished))
        chat_of(app).flush_now()
        await pilot.pause()
        step = chat_of(app).conversation.replies[-1].tokens[-1].step
        assert step.tail is not None and step.n_kept == 7
        assert app.query_one(TailPlot).step is step
        await pilot.press("f5")
        assert app.live.tail_ranks == 0


def test_snapshot_timeline_spike_and_tail_cut(snap_compare: object) -> None:
    fake = fake_backend(flat_at=SPIKE)
    app = make_app(fake, max_tokens=30, settings=TOP_K_7)

    async def run(pilot: Pilot[object]) -> None:
        await _reply(pilot, app, "f4", "f4", "f5")
        timeline = app.query_one(ReplyTimeline)
        await pilot.click("#timeline-entropy", offset=(timeline.x_of(SPIKE) or 0, 0))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run)  # type: ignore[operator]


def test_snapshot_plots_on_80x24(snap_compare: object) -> None:
    fake = fake_backend(flat_at=SPIKE)
    app = make_app(fake, max_tokens=30, settings=TOP_K_7)

    async def run(pilot: Pilot[object]) -> None:
        await _reply(pilot, app, "f4", "f5")

    assert snap_compare(app, terminal_size=SMALL, run_before=run)  # type: ignore[operator]
