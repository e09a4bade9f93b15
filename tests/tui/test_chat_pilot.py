"""Pilot tests of the chat app on the real default model (and a few on the fake)."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from backend.chat.events import PrefillProgress
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, nth_reply_finished, press_at_once, type_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.reply_view import ReplyView
from tui.panel.slider import Slider
from tui.widgets.prob_panel import ProbPanel

pytestmark = pytest.mark.anyio

SIZE = (120, 36)
# With seed 42 and the default settings the model's reply runs past 200 tokens.
LONG_PROMPT = "Write a long story about a lighthouse keeper and a storm."


async def test_slider_keys_typed_entry_and_toggle() -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        app.chat_screen.action_focus_sampling()
        await pilot.press("right", "right")
        assert app.live.current.temperature == pytest.approx(0.82)
        await pilot.press("pagedown")
        assert app.live.current.temperature == pytest.approx(0.72)
        await pilot.press("tab", "home")
        assert app.live.current.top_k == 0
        await pilot.press("tab", "enter")  # top-p: type a value
        await pilot.pause()
        await press_at_once(pilot, *"0.5", "enter")
        await pilot.pause()
        assert app.live.current.top_p == pytest.approx(0.5)
        assert app.query_one("#slider-top_p", Slider).value == pytest.approx(0.5)
        await pilot.press("enter")
        await pilot.pause()
        await press_at_once(pilot, *"1.5", "enter")  # out of range: refused, kept
        await pilot.pause()
        assert app.live.current.top_p == pytest.approx(0.5)
        app.query_one("#toggle-top_p_scope").focus()
        await pilot.press("enter")
        assert app.live.current.top_p_scope == "vocab"
        await pilot.click("#toggle-draw")
        assert app.live.current.draw == "gumbel"
        await pilot.click("#slider-temperature", offset=(13, 0))  # the bar's left end
        assert app.live.current.temperature == 0.0
        await pilot.press("ctrl+g")
        assert app.query_one("#slider-seed", Slider).value == app.live.current.seed


async def test_click_a_token_and_copy_the_reply() -> None:
    app = SamplescopeApp(FakeBackend(), max_tokens=20, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await type_message(pilot, app, "hello")
        await nth_reply_finished(pilot, app)
        chat_of(app).flush_now()
        await pilot.pause()
        view = app.query_one(ReplyView)
        await pilot.click(ReplyView, offset=(3, 0))
        assert chat_of(app).cursor is not None and chat_of(app).cursor[0] == 0
        index = chat_of(app).cursor[1]
        assert (
            app.query_one("#probs", ProbPanel).step
            is chat_of(app).conversation.replies[0].tokens[index].step
        )
        assert view.selected == index
        await pilot.press("ctrl+y")
        assert app.clipboard == chat_of(app).conversation.replies[0].text


async def test_model_text_is_literal() -> None:
    app = SamplescopeApp(FakeBackend(), max_tokens=5, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        app.query_one("#prompt", Input).value = "[bold]x[/bold] \x1b[31mred"
        await pilot.press("enter")
        await nth_reply_finished(pilot, app)
        shown = str(app.query(".user").first().render())
        assert "[bold]x[/bold]" in shown
        assert "\x1b" not in shown and "\u241b[31mred" in shown


async def test_token_cursor_keys_and_escape() -> None:
    app = SamplescopeApp(FakeBackend(), max_tokens=10, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await type_message(pilot, app, "hello")
        await nth_reply_finished(pilot, app)
        tokens = chat_of(app).conversation.replies[0].tokens
        await pilot.press("ctrl+t")
        assert chat_of(app).cursor == (0, len(tokens) - 1)
        await pilot.press("left", "left")
        assert chat_of(app).cursor == (0, len(tokens) - 3)
        assert app.query_one("#probs", ProbPanel).step is tokens[-3].step
        await pilot.press("home")
        assert chat_of(app).cursor == (0, 0)
        await pilot.press("escape")
        assert chat_of(app).cursor is None
        assert app.focused is app.query_one("#prompt")
        await pilot.pause()
        assert app.query_one("#probs", ProbPanel).step is tokens[-1].step


async def test_new_chat_forgets_the_conversation_and_the_cache() -> None:
    fake = FakeBackend()
    app = SamplescopeApp(fake, max_tokens=10, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        chat_of(app).event_log = []
        await type_message(pilot, app, "hello there")
        await nth_reply_finished(pilot, app)
        assert fake.context_used > 0
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert chat_of(app).conversation.messages == [] and chat_of(app).conversation.replies == []
        assert not app.query(ReplyView)
        chat_of(app).event_log.clear()
        await type_message(pilot, app, "hello there")
        await nth_reply_finished(pilot, app, 2)
        progress = [e for e in chat_of(app).event_log if isinstance(e, PrefillProgress)]
        # The whole prompt is prefilled again: the backend's cache was reset.
        assert progress[-1].total == len(
            fake.tokenize_messages(chat_of(app).conversation.messages[:1])
        )
