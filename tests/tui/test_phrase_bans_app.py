"""Phrase bans in the app: the panel's field, the reply going back, its ghosts shown
greyed as branches with a timeline mark, and stored."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Input

from backend.config.config import Config
from backend.session.phrase_bans import PhraseBans
from backend.store.store import ChatStore
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, send_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.branches import ghost_forks
from tui.chat.reply_view import ReplyView
from tui.chat.timeline import GHOST_MARK

pytestmark = pytest.mark.anyio

SIZE = (120, 40)
BANS = PhraseBans((" the", " cat", " they"))


def _fake(tmp_path: Path) -> FakeBackend:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF not really a model")
    fake = FakeBackend(min_reply_tokens=30)
    fake._info = replace(fake.info, path=str(model))
    return fake


async def test_a_reply_goes_back_from_banned_phrases_and_shows_its_ghosts(
    tmp_path: Path, store: ChatStore
) -> None:
    app = SamplescopeApp(
        _fake(tmp_path), max_tokens=30, cursor_blink=False, store=store, config=Config(bans=BANS)
    )
    async with app.run_test(size=SIZE) as pilot:
        finished = await send_message(pilot, app, "tell me about the cat")
        assert all(phrase not in finished.text for phrase in BANS.phrases)
        reply = app.conversation.replies[-1]
        ghosts = [branch for branch in reply.tree if branch.is_ghost]
        assert ghosts and ghosts == reply.ghosts
        assert finished.stats.discarded_tokens == sum(
            len(g.tokens) - (g.fork_at or 0) for g in ghosts
        )
        for ghost in ghosts:
            own = "".join(t.text for t in ghost.tokens[ghost.fork_at or 0 :])
            assert any(phrase in ghost.text for phrase in BANS.phrases), own
        # The status line counts the tokens decoded and discarded.
        status = str(app.query_one("#status").render())
        assert f"{finished.stats.discarded_tokens} discarded" in status
        # The timeline marks where the reply went back.
        await pilot.press("f4")
        await pilot.pause()
        marks = str(app.query_one("#timeline-marks").render())
        assert marks.count(GHOST_MARK) >= 1
        assert ghost_forks(reply)
        # The stored tree holds the same ghosts.
        chat_id = app.conversation.recorder.chat_id if app.conversation.recorder else None
        assert chat_id is not None
        turn = store.load_chat(chat_id).messages[-1]
        stored = {b.id: b for b in turn.branches}
        assert sorted(g.branch_id for g in ghosts) == sorted(  # type: ignore[type-var]
            b.id for b in stored.values() if b.is_ghost
        )
        for ghost in ghosts:
            assert ghost.branch_id is not None
            assert stored[ghost.branch_id].token_ids == tuple(t.step.token_id for t in ghost.tokens)
        # A ghost is a branch: shown greyed, labelled rejected.
        await pilot.press("ctrl+t")
        for _ in range(len(reply.tree)):
            await pilot.press("greater_than_sign")
            await pilot.pause()
            if app.conversation.replies[-1].is_ghost:
                break
        shown = app.query(ReplyView).last()
        assert shown.reply.is_ghost
        assert "rejected: a banned phrase" in shown.plain_text()


async def test_the_panel_sets_the_banned_phrases(tmp_path: Path) -> None:
    app = SamplescopeApp(_fake(tmp_path), max_tokens=30, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        field = app.query_one("#input-banned_phrases", Input)
        field.value = '[" the", " cat"]'
        await field.action_submit()
        await pilot.pause()
        assert app.conversation.bans == PhraseBans((" the", " cat"))
        field.value = "["
        await field.action_submit()
        await pilot.pause()
        assert app.conversation.bans == PhraseBans((" the", " cat"))  # refused
        assert field.value == '[" the", " cat"]'
        finished = await send_message(pilot, app, "tell me about the cat")
        assert " the" not in finished.text and " cat" not in finished.text
