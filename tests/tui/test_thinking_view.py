"""A thinking model's thinking in the app: folded under its summary line, opened with
its key or by the token cursor, marked on the timeline, folded in compare's columns.

The fake backend records each reply's first `THINKING` tokens as thinking, as the loop
does for a thinking model's (`FakeBackend(thinking=...)`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from textual.coordinate import Coordinate
from textual.pilot import Pilot
from textual.widgets import DataTable, OptionList

from backend.chat.protocol import ChatMessage
from backend.session.sweep import SweepPlan, SweepSample, SweepSetting, run_sweep
from backend.session.sweep_result import SweepResult, record_of
from sampling.sections import Section, SectionSpan
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend
from tests.helpers import HostApp, StepClock, chat_of, send_message, wait_done, wait_until
from tests.tui.test_sweep_screen import SweepApp
from tests.tui.test_tui_snapshots import make_app
from tui.app import SamplescopeApp
from tui.chat.reply_view import ReplyView
from tui.chat.timeline import ANSWER_MARK, ReplyTimeline
from tui.compare.screen import CompareScreen
from tui.explore.screen import ExploreScreen
from tui.sweep.screen import SAMPLE_COLUMNS, SweepScreen
from tui.widgets.thinking_fold import summary

pytestmark = pytest.mark.anyio

SIZE = (120, 36)
THINKING = 8
"""Each fake reply's first tokens that are its thinking."""


def thinking_app(**options: object) -> tuple[SamplescopeApp, FakeBackend]:
    fake = FakeBackend(clock=StepClock(), thinking=THINKING, **options)  # type: ignore[arg-type]
    return make_app(fake), fake


def last_view(app: SamplescopeApp) -> ReplyView:
    return app.query(ReplyView).last()


def thinking_text(app: SamplescopeApp) -> str:
    """The last reply's thinking as text (what folding hides)."""
    tokens = chat_of(app).conversation.replies[-1].tokens[:THINKING]
    return "".join(token.text for token in tokens).strip()


def answer_text(app: SamplescopeApp) -> str:
    """The last reply's answer's first words."""
    tokens = chat_of(app).conversation.replies[-1].tokens[THINKING : THINKING + 3]
    return "".join(token.text for token in tokens).strip()


def footer_keys(app: SamplescopeApp) -> set[str]:
    return {active.binding.key for active in app.active_bindings.values() if active.enabled}


async def test_thinking_is_folded_under_its_summary_and_the_key_opens_and_folds_it() -> None:
    app, _ = thinking_app()
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "tell me about the cat")
        await pilot.pause()
        view = last_view(app)
        lines = view.plain_text().splitlines()
        assert lines[0] == summary(THINKING, done=True, folded=True) == "▸ thought for 8 tokens"
        assert thinking_text(app) not in view.plain_text()
        assert lines[1].startswith(answer_text(app))  # the answer on the next line
        assert "ctrl+b" in footer_keys(app)

        await pilot.press("ctrl+b")
        await wait_until(pilot, lambda: view.thinking_open)
        lines = view.plain_text().splitlines()
        assert lines[0] == "▾ thought for 8 tokens"
        assert lines[1].startswith(thinking_text(app)[:20])
        assert any(line.startswith(answer_text(app)) for line in lines[2:])

        await pilot.press("ctrl+b")
        await wait_until(pilot, lambda: not view.thinking_open)
        assert view.plain_text().splitlines()[0] == "▸ thought for 8 tokens"
        # A second reply comes folded too; the key opens every reply's.
        await send_message(pilot, app, "and the dog")
        await pilot.pause()
        views = list(app.query(ReplyView))
        assert [v.plain_text().splitlines()[0] for v in views] == ["▸ thought for 8 tokens"] * 2
        await pilot.press("ctrl+b")
        await wait_until(pilot, lambda: all(v.thinking_open for v in views))


async def test_a_reply_without_thinking_shows_no_summary_and_no_key() -> None:
    app = make_app(FakeBackend(clock=StepClock()))
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "tell me about the cat")
        await pilot.pause()
        view = last_view(app)
        reply = chat_of(app).conversation.replies[-1]
        assert "thought" not in view.plain_text()
        assert view.plain_text().startswith(reply.tokens[0].text)  # as before: no fold
        assert "ctrl+b" not in footer_keys(app)


async def test_the_cursor_going_into_a_folded_thinking_opens_it() -> None:
    app, _ = thinking_app()
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "tell me about the cat")
        await pilot.pause()
        view = last_view(app)
        count = len(chat_of(app).conversation.replies[-1].tokens)
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: chat_of(app).cursor == (0, count - 1))
        assert not view.thinking_open
        await pilot.press("home")  # the first token: in the thinking
        await wait_until(pilot, lambda: chat_of(app).cursor == (0, 0))
        assert view.thinking_open
        assert thinking_text(app)[:20] in view.plain_text()
        selected = chat_of(app).selected
        assert selected.step is not None and selected.step.section == "thinking"
        assert selected.title == f"reply 1 token 1/{count} · thinking"
        # What-if works on a step of the thinking.
        await pilot.press("w")
        await wait_until(pilot, lambda: chat_of(app).whatif.active)
        await pilot.press("escape")
        # Folded again with the cursor in it: the summary line stands for it, and the
        # cursor's next move opens it again.
        await pilot.press("ctrl+b", "ctrl+b")
        await wait_until(pilot, lambda: not view.thinking_open)
        assert view.line_of(0) == 0
        await pilot.press("right")
        await wait_until(pilot, lambda: chat_of(app).cursor == (0, 1) and view.thinking_open)


async def test_a_branch_from_a_thinking_token_and_explore_there() -> None:
    app, _ = thinking_app()
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "tell me about the cat")
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: chat_of(app).cursor is not None)
        await pilot.press("home", "right", "right")
        await wait_until(pilot, lambda: chat_of(app).cursor == (0, 2))
        await pilot.press("x")  # explore from a step of the thinking
        await wait_until(pilot, lambda: isinstance(app.screen, ExploreScreen))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ExploreScreen))
        await pilot.press("enter")  # its alternatives: another token, a new branch
        await wait_until(pilot, lambda: isinstance(app.focused, OptionList))
        await pilot.press("down", "enter")
        await wait_until(
            pilot,
            lambda: len(chat_of(app).conversation.finished) == 2 and not chat_of(app).generating,
        )
        chat_of(app).flush_now()
        await pilot.pause()
        branch = chat_of(app).conversation.replies[-1]
        assert branch.parent is not None and branch.fork_at == 2
        sections = [token.step.section for token in branch.tokens]
        assert sections[:THINKING] == ["thinking"] * THINKING
        assert set(sections[THINKING:]) == {"answer"}
        view = last_view(app)
        assert view.reply is branch and view.thinking_open  # opened by the cursor
        assert view.plain_text().splitlines()[0] == "▾ thought for 8 tokens"
        await pilot.press("ctrl+b")  # shown for all, then folded for all
        await pilot.press("ctrl+b")
        await wait_until(pilot, lambda: not view.thinking_open)
        await pilot.press("less_than_sign")  # the first branch, the cursor where they part
        await wait_until(pilot, lambda: view.reply is not branch)
        assert chat_of(app).cursor == (0, 2)
        assert view.plain_text().splitlines()[0] == "▾ thought for 8 tokens"


async def test_a_click_on_the_summary_opens_and_folds_that_reply() -> None:
    app, _ = thinking_app()
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "tell me about the cat")
        await pilot.pause()
        view = last_view(app)
        await pilot.click(view, offset=(4, 0))
        await wait_until(pilot, lambda: view.thinking_open)
        assert chat_of(app).cursor is None  # a click on the line selects no token
        await pilot.click(view, offset=(4, 0))
        await wait_until(pilot, lambda: not view.thinking_open)


async def test_a_streaming_thinking_counts_up_folded_and_folds_when_the_answer_starts() -> None:
    app, fake = thinking_app(pause_after_tokens=5)
    async with app.run_test(size=SIZE) as pilot:
        await send_message_no_wait(pilot, app, "tell me about the cat")
        await wait_until(pilot, fake.paused.is_set)
        await wait_until(pilot, lambda: len(chat_of(app).conversation.replies[-1].tokens) == 5)
        chat_of(app).flush_now()
        await pilot.pause()
        view = last_view(app)
        assert view.plain_text().splitlines()[0] == "▸ thinking… 5 tokens"
        assert "ctrl+b" in footer_keys(app)
        await pilot.press("ctrl+b")  # open while it streams: it grows under its line
        await wait_until(pilot, lambda: view.thinking_open)
        assert view.plain_text().splitlines()[0] == "▾ thinking…"
        fake.pause_after_tokens = None
        fake.resume.set()
        await wait_until(pilot, lambda: not chat_of(app).generating)
        chat_of(app).flush_now()
        await pilot.pause()
        assert view.plain_text().splitlines()[0] == "▾ thought for 8 tokens"


async def send_message_no_wait(pilot: Pilot[Any], app: SamplescopeApp, text: str) -> None:
    """Send `text` without waiting for the reply."""
    from textual.widgets import Input

    await wait_until(pilot, lambda: chat_of(app).ready)
    prompt = app.query_one("#prompt", Input)
    prompt.focus()
    prompt.value = text
    await prompt.action_submit()


async def test_the_timeline_marks_where_the_answer_begins() -> None:
    app, _ = thinking_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f4")
        await send_message(pilot, app, "tell me about the cat")
        chat_of(app).flush_now()
        await pilot.pause()
        timeline = app.query_one(ReplyTimeline)
        assert timeline.answers == [THINKING]
        marks = app.query_one("#timeline-marks").render().plain
        assert [x for x, mark in enumerate(marks) if mark == ANSWER_MARK] == [
            timeline.x_of(THINKING)
        ]
        assert f"{ANSWER_MARK} answer" in str(timeline.border_title)


def thinking_compare() -> CompareScreen:
    backend = FakeBackend(clock=StepClock(), thinking=THINKING)
    columns = [SamplerSettings(temperature=0.5, top_k=3), SamplerSettings(temperature=1.0)]
    sea = [ChatMessage("user", "Write one sentence about the sea.")]
    return CompareScreen(backend, sea, columns, 3, max_tokens=24)


async def test_compare_columns_fold_the_thinking_and_the_cursor_opens_it() -> None:
    app = HostApp(thinking_compare)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        view = screen.column_views[0]
        body = view.query_one("ColumnText")
        shown = body.text().plain  # type: ignore[attr-defined]
        assert shown.splitlines()[0] == "▸ thought for 8 tokens"
        thinking = "".join(token.text for token in view.tokens[:THINKING]).strip()
        assert thinking not in shown
        screen.set_focus(view)
        await pilot.press("home")
        await wait_until(pilot, lambda: view.cursor == 0)
        shown = body.text().plain  # type: ignore[attr-defined]
        assert shown.splitlines()[0] == "▾ thought for 8 tokens"
        assert thinking[:20] in shown
        # The thinking key folds every column's, and opens them all.
        assert "ctrl+b" in {a.binding.key for a in app.active_bindings.values() if a.enabled}
        await pilot.press("ctrl+b")
        await wait_until(pilot, lambda: not any(v.thinking_open for v in screen.column_views))
        await pilot.press("ctrl+b")
        await wait_until(pilot, lambda: all(v.thinking_open for v in screen.column_views))


def thinking_sweep() -> SweepResult:
    """Two settings × one prompt × two samples on the fake, each sample thinking first."""
    backend = FakeBackend(clock=StepClock(), thinking=THINKING)
    settings = tuple(
        SweepSetting(label, SamplerSettings(temperature=t))
        for label, t in [("t=0.7", 0.7), ("t=1.5", 1.5)]
    )
    plan = SweepPlan(("Tell me about the sea.",), settings, 2, seed=5, max_tokens=20)
    samples = [event for event in run_sweep(backend, plan) if isinstance(event, SweepSample)]
    records = tuple(record_of(sample, None, 40) for sample in samples)
    return SweepResult("<fake>", plan, records, top_k=40)


def test_a_sweep_sample_keeps_its_thinking_runs_and_text_through_json() -> None:
    result = thinking_sweep()
    record = result.samples[0]
    assert record.thinking_runs == (SectionSpan(Section.THINKING, 0, THINKING - 1),)
    assert record.thinking and record.figures.text.startswith(record.thinking)
    again = SweepResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again.samples == result.samples
    plain = replace(record, thinking_runs=(), thinking="")
    assert "thinking" not in plain.to_json()  # a sample without thinking: as before


async def test_sweep_samples_show_the_thinking_folded() -> None:
    result = thinking_sweep()
    app = SweepApp(result)
    async with app.run_test(size=(110, 34)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen))
        screen = app.screen
        assert isinstance(screen, SweepScreen)
        screen.show_samples(0)
        await pilot.pause()
        table = screen.query_one(DataTable)
        cell = table.get_cell_at(Coordinate(0, len(SAMPLE_COLUMNS) - 1))
        record = result.samples_of(0)[0]
        answer = record.figures.text.removeprefix(record.thinking).strip()
        assert cell.plain.startswith("▸ thought for 8 tokens · ")
        assert cell.plain.removeprefix("▸ thought for 8 tokens · ").startswith(answer[:20])


# --- snapshots ------------------------------------------------------------------------


def test_snapshot_thinking_folded_with_the_timeline(snap_compare: Any) -> None:
    app, _ = thinking_app()

    async def run_before(pilot: Pilot[Any]) -> None:
        await pilot.press("f4")
        await send_message(pilot, app, "tell me about the cat")
        chat_of(app).flush_now()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_thinking_streaming_folded(snap_compare: Any) -> None:
    app, fake = thinking_app(pause_after_tokens=5)

    async def run_before(pilot: Pilot[Any]) -> None:
        await send_message_no_wait(pilot, app, "tell me about the cat")
        await wait_until(pilot, fake.paused.is_set)
        await wait_until(pilot, lambda: len(chat_of(app).conversation.replies[-1].tokens) == 5)
        chat_of(app).flush_now()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_thinking_opened_by_the_cursor(snap_compare: Any) -> None:
    app, _ = thinking_app()

    async def run_before(pilot: Pilot[Any]) -> None:
        await pilot.press("f4")
        await send_message(pilot, app, "tell me about the cat")
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: chat_of(app).cursor is not None)
        await pilot.press("home", "right", "right")
        await wait_until(pilot, lambda: chat_of(app).cursor == (0, 2))
        chat_of(app).flush_now()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_compare_columns_fold_the_thinking(snap_compare: Any) -> None:
    app = HostApp(thinking_compare)

    async def run_before(pilot: Pilot[Any]) -> None:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        screen.set_focus(screen.column_views[1])
        await pilot.press("home", "right")
        await wait_until(pilot, lambda: screen.column_views[1].cursor == 1)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(140, 40), run_before=run_before)


def test_snapshot_sweep_samples_fold_the_thinking(snap_compare: Any) -> None:
    app = SweepApp(thinking_sweep())

    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen))
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.screen.listing == 0)  # type: ignore[attr-defined]
        await pilot.pause()

    assert snap_compare(app, terminal_size=(110, 34), run_before=run_before)
