"""Redraws while a reply streams: held back by the draw budget, and following the text.

On the fake backend, paused mid-reply: the budget's decision is the only thing that
differs between the two runs of the first test, and the transcript's room reserved
below a streaming reply is visible state of the second.
"""

from __future__ import annotations

import pytest

from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, nth_reply_finished, send_message, type_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.draw_budget import DrawBudget
from tui.chat.reply import Reply
from tui.chat.reply_view import GROW, ReplyView
from tui.chat.transcript import FOLLOW_JUMP, Transcript

pytestmark = pytest.mark.anyio

SIZE = (120, 36)


def never_allowing() -> DrawBudget:
    """A budget always in debt, whose forced redraw never comes (1 h)."""
    spent = [0.0]

    def cpu() -> float:
        spent[0] += 1.0
        return spent[0]

    return DrawBudget(0.01, longest_wait=3600.0, cpu_clock=cpu)


@pytest.mark.parametrize("held", [False, True])
async def test_an_overdrawn_budget_holds_the_text_back_and_loses_no_token(held: bool) -> None:
    backend = FakeBackend(pause_after_tokens=12)
    app = SamplescopeApp(backend, max_tokens=20, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        chat_of(app).schedule.budget = never_allowing() if held else None
        await type_message(pilot, app, "hello")
        await wait_until(pilot, backend.paused.is_set)
        reply = app.conversation.replies[-1]
        await wait_until(pilot, lambda: len(reply.tokens) == 12)  # drained...
        await pilot.pause(0.3)  # ...and three ticks of the redraw timer later:
        view = app.query(ReplyView).last()
        shown = view.plain_text()
        if held:
            assert shown == "…" and chat_of(app).schedule.budget.held > 0  # type: ignore[union-attr]
        else:
            assert shown.split() == "".join(token.text for token in reply.tokens).split()
        backend.resume.set()
        await nth_reply_finished(pilot, app)
        words = "".join(token.text for token in reply.tokens).split()
        assert len(reply.tokens) == 20 and view.plain_text().split()[: len(words)] == words


async def test_tokens_that_arrive_before_the_first_layout_wait_for_a_sync() -> None:
    """The view's first layout draws the tokens the chat has shown (`sync`), not those
    that arrived before it: when text is drawn does not hang on when layout runs."""
    app = SamplescopeApp(FakeBackend(), max_tokens=8, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "hello")
        done = app.conversation.replies[-1]
        streaming = Reply(seed=done.seed, settings=done.settings)
        view = ReplyView(streaming, 1)  # made as the reply starts: no token yet
        streaming.tokens.extend(done.tokens[:5])  # tokens arrive before it is laid out
        await app.query_one(Transcript).mount(view)
        await wait_until(pilot, lambda: view.size.width > 0)
        assert view.plain_text() == "…"
        view.sync()
        assert view.plain_text().split() == "".join(t.text for t in done.tokens[:5]).split()


async def test_a_tick_with_no_new_token_neither_redraws_nor_follows() -> None:
    backend = FakeBackend(pause_after_tokens=12)
    app = SamplescopeApp(backend, max_tokens=20, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        chat = chat_of(app)
        chat.schedule.budget = None  # the text is due at every tick
        await type_message(pilot, app, "hello")
        await wait_until(pilot, backend.paused.is_set)
        reply = app.conversation.replies[-1]
        view = app.query(ReplyView).last()
        await wait_until(pilot, lambda: len(reply.tokens) == 12)
        words = "".join(token.text for token in reply.tokens).split()
        await wait_until(pilot, lambda: view.plain_text().split() == words)
        transcript = app.query_one(Transcript)
        follows: list[bool] = []
        transcript.follow = follows.append  # type: ignore[method-assign,assignment]
        for _ in range(3):
            chat.paint()
        assert follows == [] and not view.sync()
        reply.tokens.append(reply.tokens[-1])  # a new token: drawn and followed
        chat.paint()
        assert len(follows) == 1
        reply.tokens.pop()
        view.show(reply)
        backend.resume.set()
        await nth_reply_finished(pilot, app)


async def test_the_transcript_follows_the_last_line_not_the_room_below_it() -> None:
    backend = FakeBackend(pause_after_tokens=600, min_reply_tokens=800)
    app = SamplescopeApp(backend, max_tokens=800, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await type_message(pilot, app, "tell me a long story")
        await wait_until(pilot, backend.paused.is_set)
        view = app.query(ReplyView).last()
        transcript = app.query_one(Transcript)
        reply = app.conversation.replies[-1]
        await wait_until(pilot, lambda: len(reply.tokens) == 600)  # drained
        words = "".join(token.text for token in reply.tokens).split()
        viewport = transcript.scrollable_content_region.height

        def text_bottom() -> int:
            return view.virtual_region.y + view.text_height

        # The redraw timer draws every token the backend gave (it goes on after the
        # pause), the view is laid out at its last height, and the follow is applied.
        await wait_until(pilot, lambda: view.plain_text().split() == words)
        await wait_until(pilot, lambda: view.size.height > view.text_height > 2 * GROW)
        await wait_until(pilot, lambda: transcript.scroll_y >= text_bottom() - viewport)
        lines = view.text_height
        room = view.size.height - lines
        assert view.size.height == 4 * GROW and room > 0  # the reserve doubled twice
        assert transcript.at_end
        # The last line drawn is in view, in the view's lower third: the view jumped a
        # third of its height ahead into the room, not to the room's end.
        jump = viewport // FOLLOW_JUMP
        assert transcript.scroll_y <= text_bottom() - viewport + jump
        assert transcript.scroll_y < transcript.max_scroll_y
        # A notice while it streams goes above the reply: the text stays in view.
        before = view.virtual_region.y
        note = transcript.add_note("a notice")
        await wait_until(pilot, lambda: view.virtual_region.y > before)  # laid out below it
        # ... and followed: the scroll that keeps the text in view lands after the layout.
        await wait_until(pilot, lambda: transcript.scroll_y >= text_bottom() - viewport)
        assert transcript.children.index(note) < transcript.children.index(view)
        assert text_bottom() - viewport <= transcript.scroll_y <= text_bottom() - viewport + jump
        # The room below the text is not scrolled into: the end is one jump past it.
        transcript.scroll_end(animate=False, immediate=True)
        assert transcript.scroll_y <= text_bottom() - viewport + jump < transcript.max_scroll_y
        # Scrolled up two lines past the last jump, the view stops following: even
        # right after a redraw, whose follow is applied after the next refresh.
        transcript.follow()
        transcript.scroll_to(y=transcript.scroll_y - 2 - jump, animate=False, immediate=True)
        left_at = transcript.scroll_y
        assert not transcript.at_end
        backend.resume.set()
        await nth_reply_finished(pilot, app)
        await wait_until(pilot, lambda: view.size.height == view.text_height)  # no room left
        assert transcript.scroll_y == left_at < transcript.max_scroll_y  # not pulled back


async def test_a_followed_reply_ends_with_its_last_line_at_the_bottom() -> None:
    backend = FakeBackend(min_reply_tokens=600)
    app = SamplescopeApp(backend, max_tokens=600, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await type_message(pilot, app, "tell me a long story")
        await nth_reply_finished(pilot, app)
        await pilot.pause(0.2)
        transcript = app.query_one(Transcript)
        view = app.query(ReplyView).last()
        assert view.size.height == view.text_height > transcript.size.height
        assert transcript.scroll_y == transcript.max_scroll_y > 0
