"""The why view of a loop (fake model): its copies and climb, a snapshot, and the two
ways out: the alternatives at its start, the loop banned there."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from backend.config.config import Config
from backend.session.loop_watch import LoopGuard
from sampling.analysis.loops import LoopRule
from sampling.settings.record import SamplerSettings
from tests.helpers import chat_of, columns_fit, send_message, table_measured, wait_until
from tests.tui.test_tui_snapshots import fake_backend, make_app, send
from tui.app import SamplescopeApp
from tui.chat.loop_escape import NO_LOOP, loop_phrase
from tui.loops.why_screen import LoopWhyScreen
from tui.widgets.alternatives import AlternativesScreen

pytestmark = pytest.mark.anyio

SIZE = (120, 40)
RULE = LoopRule(2, 32, 3)
# Greedy with a repeat penalty below 1: the fake model's reply loops from token 17.
LOOPING = SamplerSettings(temperature=0.0, repeat_penalty=0.5, repeat_last_n=8)


def _app(mode: str = "mark") -> SamplescopeApp:
    config = Config(loops=LoopGuard(mode, RULE))  # type: ignore[arg-type]
    fake = fake_backend(min_reply_tokens=1000)
    return make_app(fake, settings=LOOPING, max_tokens=40, config=config)


async def _why(pilot: Pilot[object], app: SamplescopeApp) -> LoopWhyScreen:
    await pilot.press("f9")
    await wait_until(pilot, lambda: isinstance(app.screen, LoopWhyScreen))
    assert isinstance(app.screen, LoopWhyScreen)
    return app.screen


async def test_the_why_view_shows_the_copies_one_under_the_other() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "tell me about the cat")
        reply = app.conversation.replies[-1]
        loop = reply.loop
        assert loop is not None
        screen = await _why(pilot, app)
        grid = screen.query_one(DataTable)
        assert grid.row_count == len(screen.rows) >= loop.count
        assert len(grid.columns) == loop.period
        for copy, row in enumerate(screen.rows):
            for cell in row:
                assert cell.index == loop.start + copy * loop.period + cell.offset
                assert cell.step is reply.tokens[cell.index].step
                # The current reply's steps are in memory: every stage is known.
                assert cell.raw is not None and cell.penalized is not None
        # The repeat penalty below 1 lifts a repeated token: after it, p is higher.
        last = screen.rows[loop.count - 1][0]
        assert last.penalized is not None and last.raw is not None
        assert last.penalized > last.raw
        detail = str(screen.query_one("#loop-detail").render())
        assert "copy after copy" in detail and "→" in detail
        start = str(screen.query_one("#loop-start").render())
        assert f"token {loop.start + 1}" in start
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, LoopWhyScreen))


async def test_the_grid_is_drawn_at_its_widths_as_soon_as_it_is_filled() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "tell me about the cat")
        screen = await _why(pilot, app)
        grid = screen.query_one(DataTable)
        screen.fill_grid()  # checked before the table is idle
        assert grid.row_count == len(screen.rows) and columns_fit(grid)
        # the row labels, too, are drawn in full at once
        first = grid.render_line(grid.header_height).text
        assert first.lstrip().startswith("copy 1 ")


async def test_a_opens_the_alternatives_at_the_loop_s_start() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "tell me about the cat")
        loop = app.conversation.replies[-1].loop
        assert loop is not None
        await _why(pilot, app)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, AlternativesScreen))
        assert isinstance(app.screen, AlternativesScreen)
        assert app.screen.title_text == f"reply 1 token {loop.start + 1}"


async def test_x_bans_the_loop_there_and_keeps_the_attempt_as_a_ghost() -> None:
    app = _app("stop")
    async with app.run_test(size=SIZE) as pilot:
        first = await send_message(pilot, app, "tell me about the cat")
        assert first.reason == "loop"
        old = app.conversation.replies[-1]
        loop = old.loop
        assert loop is not None
        phrase = loop_phrase(chat_of(app), 0, loop)
        await _why(pilot, app)
        await pilot.press("x")
        await wait_until(pilot, lambda: app.conversation.replies[-1] is not old)
        await wait_until(pilot, lambda: not chat_of(app).generating, timeout=60)
        branch = app.conversation.replies[-1]
        assert branch.parent is old and branch.fork_at == loop.start
        assert [t.step.token_id for t in branch.tokens[: loop.start]] == [
            t.step.token_id for t in old.tokens[: loop.start]
        ]
        assert branch.tokens[loop.start].step.token_id != old.tokens[loop.start].step.token_id
        assert phrase not in branch.text[len("".join(t.text for t in old.tokens[: loop.start])) :]
        ghosts = branch.ghosts
        assert ghosts and ghosts[0].fork_at == loop.start
        assert app.conversation.bans.phrases == ()  # the ban was the branch's own


def test_snapshot_of_the_why_view(snap_compare: object, tmp_path: Path) -> None:
    app = _app()

    async def why(pilot: Pilot[object]) -> None:
        await send(pilot, app, "tell me about the cat")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        await pilot.press("f9")
        await wait_until(
            pilot,
            lambda: (
                isinstance(app.screen, LoopWhyScreen)
                and isinstance(app.focused, DataTable)
                and table_measured(app.focused)
            ),
        )
        detail = app.screen.query_one("#loop-detail", Static)
        before = str(detail.render())
        await pilot.press("right")
        # the highlighted cell's message reaches the screen, which shows its detail
        await wait_until(pilot, lambda: str(detail.render()) != before)
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(app, terminal_size=SIZE, run_before=why)  # type: ignore[operator]


async def test_f9_without_a_loop_says_so() -> None:
    app = _app("off")
    async with app.run_test(size=SIZE) as pilot:
        finished = await send_message(pilot, app, "tell me about the cat")
        assert finished.loop is None
        await pilot.press("f9")
        await pilot.pause()
        assert not isinstance(app.screen, LoopWhyScreen)
        assert [n.message for n in app._notifications] == [NO_LOOP]
