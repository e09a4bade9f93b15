"""Loops in the app (fake model): the panel's setting, the timeline's mark, the status
line, the stop, the stored loop."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from backend.chat.protocol import ChatMessage
from backend.config.config import Config
from backend.session.loop_watch import LoopGuard
from backend.store.store import ChatStore
from sampling.analysis.loops import LoopRule, find_loop, first_loop
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend
from tests.helpers import HostApp, chat_of, send_message, wait_done, wait_until
from tui.app import SamplescopeApp
from tui.chat.timeline import LOOP_MARK, LOOP_SPAN_MARK, ReplyTimeline
from tui.compare.columns import CompareColumn
from tui.compare.screen import CompareScreen
from tui.panel.loop_controls import LoopControls
from tui.panel.toggle import Toggle
from tui.widgets.status_line import LOOP_SIGN

pytestmark = pytest.mark.anyio

SIZE = (120, 40)
RULE = LoopRule(2, 32, 3)
QUESTION = [ChatMessage("user", "tell me about the cat")]
# Greedy with a repeat penalty below 1: the fake model's reply loops from token 17.
LOOPING = SamplerSettings(temperature=0.0, repeat_penalty=0.5, repeat_last_n=8)


def _fake(tmp_path: Path) -> FakeBackend:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF not really a model")
    fake = FakeBackend(min_reply_tokens=1000)
    fake._info = replace(fake.info, path=str(model))
    return fake


def _app(tmp_path: Path, mode: str, store: ChatStore | None = None) -> SamplescopeApp:
    config = Config(loops=LoopGuard(mode, RULE))  # type: ignore[arg-type]
    return SamplescopeApp(
        _fake(tmp_path),
        settings=LOOPING,
        max_tokens=60,
        cursor_blink=False,
        store=store,
        config=config,
    )


async def test_a_loop_is_marked_on_the_timeline_and_the_status_line(tmp_path: Path) -> None:
    app = _app(tmp_path, "mark")
    async with app.run_test(size=SIZE) as pilot:
        finished = await send_message(pilot, app, "tell me about the cat")
        assert finished.reason == "max_tokens"
        loop = find_loop(list(finished.token_ids), 2, 32, 3)
        assert loop is not None and app.conversation.replies[-1].loop == loop == finished.loop
        status = str(app.query_one("#status").render())
        assert f"loop: {loop.period} tokens × {loop.count} from token {loop.start + 1}" in status
        await pilot.press("f4")  # the timeline
        await pilot.pause()
        timeline = chat_of(app).panel(ReplyTimeline)
        marks = str(app.query_one("#timeline-marks").render())
        start = timeline.x_of(loop.start)
        assert start is not None and marks[start] == LOOP_MARK
        assert marks.count(LOOP_SPAN_MARK) > 0 and marks.rstrip().endswith(LOOP_SPAN_MARK)


async def test_stop_ends_the_reply_and_the_loop_is_stored(tmp_path: Path, store: ChatStore) -> None:
    app = _app(tmp_path, "stop", store)
    async with app.run_test(size=SIZE) as pilot:
        finished = await send_message(pilot, app, "tell me about the cat")
        assert finished.reason == "loop" and finished.loop is not None
        assert finished.loop.count == RULE.min_count
        assert "stopped on a loop" in str(app.query_one("#status").render())
        recorder = app.conversation.recorder
        assert recorder is not None and recorder.chat_id is not None
        stored = store.load_chat(recorder.chat_id).replies[-1]
        assert (stored.finish_reason, stored.loop) == ("loop", finished.loop)


async def test_the_panel_switches_loops_off(tmp_path: Path) -> None:
    app = _app(tmp_path, "stop")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        assert app.conversation.loops == LoopGuard("stop", RULE)
        mode = app.query_one("#toggle-loop_mode", Toggle)
        assert mode.value == "stop"
        mode.action_cycle(-1)  # stop → mark: the chat hears it two messages later
        await wait_until(pilot, lambda: app.conversation.loops.mode != "stop")
        assert app.conversation.loops == LoopGuard("mark", RULE)
        mode.action_cycle(-1)  # mark → off
        await wait_until(pilot, lambda: app.conversation.loops.mode != "mark")
        assert not app.conversation.loops
        assert app.query_one(LoopControls).guard == LoopGuard("off", RULE)
        finished = await send_message(pilot, app, "tell me about the cat")
        assert finished.reason == "max_tokens" and finished.loop is None
        assert "loop" not in str(app.query_one("#status").render())


async def test_compare_marks_the_columns_that_looped() -> None:
    looping = LOOPING
    plain = SamplerSettings(temperature=0.0)
    columns = [CompareColumn("looping", looping), CompareColumn("plain", plain)]
    app = HostApp(
        lambda: CompareScreen(
            FakeBackend(min_reply_tokens=1000), QUESTION, columns, 3, max_tokens=40
        )
    )
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        looped, other = screen.column_views
        assert looped.finished is not None and other.finished is not None
        loop = first_loop(looped.finished.token_ids)
        assert loop is not None and looped.stats().loop == loop
        assert f"{LOOP_SIGN} loop {loop.period}×{loop.count}" in str(
            looped.query_one(".column-stats").render()
        )
        assert other.stats().loop is None == first_loop(other.finished.token_ids)
        assert LOOP_SIGN not in str(other.query_one(".column-stats").render())
