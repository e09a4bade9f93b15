"""Navigation by surprise on the fake backend: `]`/`[` jump the token cursor between
surprising tokens, `s` changes what counts as surprising (the timeline marks follow),
`g` tints by GLTR's rank buckets instead of probability."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from sampling.analysis.surprise import DEFAULT_SURPRISE, SurpriseRule, next_rule
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.helpers import chat_of, wait_until
from tests.tui.test_tui_snapshots import fake_backend, make_app, send
from tui.app import SamplescopeApp
from tui.chat.reply_view import ReplyView
from tui.chat.timeline import SURPRISE_MARK, ReplyTimeline
from tui.chat.transcript import Transcript
from tui.widgets.token_look import prob_style, rank_style

pytestmark = pytest.mark.anyio

SIZE = (120, 36)
# Hot and unfiltered: the fake's replies draw tokens of every rank.
HOT = DEFAULT_CHAT_SETTINGS.with_changes(temperature=1.5, top_k=0, top_p=1.0, min_p=0.0)


async def reply_then_cursor(pilot: Pilot[object], app: SamplescopeApp, *keys: str) -> None:
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
    await pilot.press("ctrl+t")  # token-cursor mode on the latest token
    await pilot.pause()


def surprising(app: SamplescopeApp, rule: SurpriseRule) -> list[int]:
    return [
        i for i, t in enumerate(chat_of(app).conversation.replies[0].tokens) if rule.matches(t.step)
    ]


async def test_brackets_jump_between_surprising_tokens() -> None:
    app = make_app(fake_backend(), max_tokens=40, settings=HOT)
    async with app.run_test(size=SIZE) as pilot:
        await reply_then_cursor(pilot, app)
        rule = app.query_one(Transcript).surprise
        assert rule == DEFAULT_SURPRISE
        last = len(chat_of(app).conversation.replies[0].tokens) - 1
        expected = [i for i in surprising(app, rule) if i < last]  # before the cursor
        assert 3 <= len(expected) < last  # some tokens are surprising, not all
        assert chat_of(app).cursor == (0, last)
        visited = []
        for _ in expected:
            await pilot.press("left_square_bracket")
            assert chat_of(app).cursor is not None
            visited.append(chat_of(app).cursor[1])
        assert visited == expected[::-1]
        await pilot.press("left_square_bracket")  # none before: the cursor stays
        assert chat_of(app).cursor == (0, expected[0])
        await pilot.press("right_square_bracket")
        assert chat_of(app).cursor == (0, expected[1])
        # The panel follows the cursor, as for ← →.
        probs = app.query_one("#probs")
        assert probs.step is chat_of(app).conversation.replies[0].tokens[expected[1]].step  # type: ignore[attr-defined]


async def test_s_changes_the_rule_and_the_timeline_marks_follow() -> None:
    app = make_app(fake_backend(), max_tokens=40, settings=HOT)
    async with app.run_test(size=SIZE) as pilot:
        await reply_then_cursor(pilot, app, "f4")
        timeline = app.query_one(ReplyTimeline)
        transcript = app.query_one(Transcript)
        assert timeline.surprising == surprising(app, DEFAULT_SURPRISE)
        marks = app.query_one("#timeline-marks").render().plain
        drawn = [x for x, mark in enumerate(marks) if mark == SURPRISE_MARK]
        cursor_x = timeline.x_of(len(chat_of(app).conversation.replies[0].tokens) - 1)
        assert drawn == [
            timeline.x_of(i) for i in timeline.surprising if timeline.x_of(i) != cursor_x
        ]
        await pilot.press("s")
        await pilot.pause()
        rule = next_rule(DEFAULT_SURPRISE)
        assert transcript.surprise == rule == SurpriseRule("p", 0.2)
        assert timeline.surprising == surprising(app, rule)
        assert len(timeline.surprising) > len(surprising(app, DEFAULT_SURPRISE))


async def test_shift_s_types_a_rule_and_a_bad_one_is_refused() -> None:
    from tui.widgets.entry import ValueEntryScreen

    app = make_app(fake_backend(), max_tokens=40, settings=HOT)
    async with app.run_test(size=SIZE) as pilot:
        await reply_then_cursor(pilot, app, "f4")
        transcript = app.query_one(Transcript)
        timeline = app.query_one(ReplyTimeline)
        for typed, expected in (("surprise>1.5", SurpriseRule("surprise", 1.5)), ("p>0.2", None)):
            await pilot.press("S")
            await wait_until(pilot, lambda: isinstance(app.screen, ValueEntryScreen))
            await pilot.press(*typed, "enter")
            await wait_until(pilot, lambda: not isinstance(app.screen, ValueEntryScreen))
            await pilot.pause()
            assert transcript.surprise == (expected or SurpriseRule("surprise", 1.5))
        rule = transcript.surprise
        assert timeline.surprising == surprising(app, rule)
        assert timeline.border_title is not None and "• surprise>1.5" in str(timeline.border_title)


async def test_g_tints_by_rank_bucket_and_back() -> None:
    app = make_app(fake_backend(), max_tokens=40, settings=HOT)
    async with app.run_test(size=SIZE) as pilot:
        await reply_then_cursor(pilot, app)
        view = app.query_one(ReplyView)
        assert not view.marks.colour
        await pilot.press("g")
        assert view.marks.colour and view.marks.by_rank and chat_of(app).colour
        tokens = chat_of(app).conversation.replies[0].tokens
        ranks = [t.step.rank for t in tokens]
        assert all(r is not None for r in ranks) and max(r or 0 for r in ranks) > 10
        for index in (0, 5):
            step = tokens[index].step
            assert view.marks.look(index, step.prob, step.rank).word == rank_style(step.rank)
        await pilot.press("g")
        assert view.marks.colour and not view.marks.by_rank
        step = tokens[0].step
        assert view.marks.look(0, step.prob, step.rank).word == prob_style(step.prob)


async def test_the_footer_shows_the_navigation_keys() -> None:
    app = make_app(fake_backend(), max_tokens=10)
    async with app.run_test(size=(160, 36)) as pilot:
        await reply_then_cursor(pilot, app)
        keys = {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}
        assert {"left_square_bracket", "right_square_bracket", "s", "g"} <= keys


def test_snapshot_rank_colouring_and_surprise_marks(snap_compare: object) -> None:
    app = make_app(fake_backend(), max_tokens=40, settings=HOT)

    async def run(pilot: Pilot[object]) -> None:
        await reply_then_cursor(pilot, app, "f4")
        await pilot.press("g", "left_square_bracket")
        app.clear_notifications()  # the note "g" shows would hide the timeline's corner
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run)  # type: ignore[operator]
