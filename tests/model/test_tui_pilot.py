"""Pilot tests of the chat app on the real default model (and a few on the fake)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.chat.events import PhaseEvent, PrefillProgress, TokenEvent
from backend.session.llama_backend import LlamaBackend
from tests.helpers import chat_of, nth_reply_finished, type_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.reply_view import ReplyView
from tui.widgets.prob_panel import ProbPanel

pytestmark = pytest.mark.anyio

SIZE = (120, 36)
# With seed 42 and the default settings the model's reply runs past 200 tokens.
LONG_PROMPT = "Write a long story about a lighthouse keeper and a storm."


@pytest.fixture(scope="module")
def llama(default_model_path: Path) -> Iterator[LlamaBackend]:
    """The default model, loaded once for this file."""
    backend = LlamaBackend.load(default_model_path, n_ctx=2048, n_threads=1)
    yield backend
    backend.close()


async def test_type_send_and_tokens_arrive(llama: LlamaBackend) -> None:
    app = SamplescopeApp(llama, max_tokens=24, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        chat_of(app).event_log = []
        await type_message(pilot, app, "Name three colours.")
        finished = await nth_reply_finished(pilot, app)
        chat_of(app).flush_now()
        await pilot.pause()
        log = chat_of(app).event_log
        assert isinstance(log[0], PhaseEvent) and log[0].phase == "prefill"
        assert any(isinstance(e, PrefillProgress) for e in log)
        tokens = [e for e in log if isinstance(e, TokenEvent)]
        assert tokens, "no token arrived"
        assert [t.index for t in tokens] == list(range(len(tokens)))
        assert log[-1] is finished and finished.reason in ("eos", "max_tokens")
        reply = chat_of(app).conversation.replies[-1]
        assert reply.tokens == tokens
        assert reply.text == finished.text != ""
        assert chat_of(app).conversation.messages[-1].role == "assistant"
        assert chat_of(app).conversation.messages[-1].content == finished.text
        assert app.query_one("#probs", ProbPanel).step is tokens[-1].step
        assert chat_of(app).status.phase == "idle"
        assert chat_of(app).status.ctx_used == llama.context_used > 0
        shown = app.query_one(ReplyView).plain_text()
        assert finished.text.strip()[:10] in shown


async def test_slider_in_the_middle_of_a_reply(llama: LlamaBackend) -> None:
    app = SamplescopeApp(llama, max_tokens=200, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await type_message(pilot, app, LONG_PROMPT)
        await wait_until(
            pilot,
            lambda: (
                bool(chat_of(app).conversation.replies)
                and len(chat_of(app).conversation.replies[-1].tokens) >= 3
            ),
            120,
        )
        app.chat_screen.action_focus_sampling()  # the temperature slider
        before = len(chat_of(app).conversation.replies[-1].tokens)
        await pilot.press("shift+right")  # coarse step: 0.80 -> 0.90
        assert app.live.current.temperature == pytest.approx(0.9)
        await wait_until(
            pilot,
            lambda: (
                not chat_of(app).generating
                or any(
                    t.step.settings.temperature > 0.85
                    for t in chat_of(app).conversation.replies[-1].tokens[-3:]
                )
            ),
            120,
        )
        await pilot.press("escape")
        await nth_reply_finished(pilot, app)
        temps = [t.step.settings.temperature for t in chat_of(app).conversation.replies[-1].tokens]
        switch = next((i for i, value in enumerate(temps) if value > 0.85), None)
        assert switch is not None, f"no step after the change: {before} then {len(temps)} tokens"
        assert switch >= before
        assert temps[:switch] == [pytest.approx(0.8)] * switch
        assert temps[switch:] == [pytest.approx(0.9)] * (len(temps) - switch)


async def test_escape_cancels_and_keeps_the_partial_reply(llama: LlamaBackend) -> None:
    app = SamplescopeApp(llama, max_tokens=400, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await type_message(pilot, app, LONG_PROMPT)
        await wait_until(
            pilot,
            lambda: (
                bool(chat_of(app).conversation.replies)
                and len(chat_of(app).conversation.replies[-1].tokens) >= 5
            ),
            120,
        )
        await pilot.press("escape")
        finished = await nth_reply_finished(pilot, app)
        reply = chat_of(app).conversation.replies[-1]
        assert finished.reason == "cancelled"
        assert 5 <= len(reply.tokens) < 400
        assert reply.text == finished.text
        assert chat_of(app).conversation.messages[-1].content == finished.text
        assert "[stopped]" in app.query_one(ReplyView).plain_text()
        assert chat_of(app).status.last_reason == "stopped"


async def test_ctrl_r_regenerates_with_the_same_seed(llama: LlamaBackend) -> None:
    app = SamplescopeApp(llama, max_tokens=40, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await type_message(pilot, app, "Tell me a fact about the moon.")
        first = await nth_reply_finished(pilot, app)
        seed = chat_of(app).conversation.replies[-1].seed
        await pilot.press("ctrl+g")  # a new seed: ctrl+r must still use the reply's own
        await pilot.pause()
        assert app.live.current.seed != seed
        await pilot.press("ctrl+r")
        second = await nth_reply_finished(pilot, app, 2)
        assert app.live.current.seed == seed
        assert second.token_ids == first.token_ids
        assert second.text == first.text
        assert len(chat_of(app).conversation.replies) == 1
        assert [m.role for m in chat_of(app).conversation.messages] == ["user", "assistant"]


# -- controls, on the fake backend (deterministic, fast) ---------------------------
