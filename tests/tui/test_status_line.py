"""The status line: its phase indicator, and a branch's figures in the app."""

from __future__ import annotations

import pytest

from tests.helpers import chat_of, wait_until
from tests.tui.test_tui_snapshots import SIZE, TOP_P_SETTINGS, fake_backend, make_app, send
from tui.chat.steering import start_branch
from tui.widgets.status_line import StatusLine


def rendered(**changes: object) -> str:
    line = StatusLine()
    line.update(model="m", threads=2, ctx_total=4096, **changes)
    return line.render().plain


def test_prefill_before_the_first_chunk_shows_no_zero_total() -> None:
    text = rendered(phase="prefill", prefill_done=0, prefill_total=0)
    assert "prefill…" in text and "0/0" not in text


def test_prefill_progress_shows_done_of_total() -> None:
    assert "64/300 tokens" in rendered(phase="prefill", prefill_done=64, prefill_total=300)


def test_decode_and_idle_figures() -> None:
    assert "12.5 tok/s · 7 tokens" in rendered(phase="decode", decode_tps=12.5, decode_tokens=7)
    idle = rendered(phase="idle", last_ttft_ms=119.0, last_tps=129.9, last_reason="eos")
    assert "TTFT 119 ms" in idle and "129.9 tok/s" in idle


def test_where_the_layers_are_is_shown_only_when_not_here() -> None:
    assert " m  2 threads · 2 RPC servers · ctx 0/4096 " in rendered(placement="2 RPC servers")
    assert "RPC" not in rendered() and " m  2 threads · ctx 0/4096 " in rendered()


@pytest.mark.anyio
async def test_a_branch_counts_only_the_tokens_it_generated() -> None:
    """A branch from token 10: the live count and rate, the reply's figures, and the
    context count are the branch's own (its 10 given tokens are not sampled again)."""
    fake = fake_backend(min_reply_tokens=40)
    app = make_app(fake, max_tokens=30, settings=TOP_P_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        fake.pause_after_tokens = 15
        start_branch(chat_of(app), 10, None)
        await wait_until(pilot, fake.paused.is_set)
        await wait_until(pilot, lambda: len(chat_of(app).conversation.replies[-1].tokens) == 15)
        chat_of(app).flush_now()
        assert chat_of(app).status.phase == "decode" and chat_of(app).status.decode_tokens == 5
        assert "· 5 tokens" in app.query_one(StatusLine).render().plain
        fake.resume.set()
        await wait_until(
            pilot,
            lambda: not chat_of(app).generating and len(chat_of(app).conversation.finished) == 2,
        )
        branch, stats = (
            chat_of(app).conversation.replies[-1],
            chat_of(app).conversation.finished[-1].stats,
        )
        assert len(branch.tokens) == 30 and stats.decode_tokens == 20
        assert chat_of(app).status.last_tps == stats.decode_tps
        assert stats.decode_tps == pytest.approx(20 / (stats.decode_ms / 1000))
        prompt = fake.tokenize_messages(chat_of(app).conversation.messages[:-1])
        # The last token (the limit reached) is sampled, never decoded.
        assert chat_of(app).status.ctx_used == fake.context_used == len(prompt) + 29
