"""Beam search in the app: the panel's setting makes replies beam searches, the best
beam is the reply and the others are branches of its turn, stored."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Static

from backend.session.beams import beam_search
from backend.session.phrase_bans import PhraseBans
from backend.store.store import ChatStore
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, send_message, wait_until
from tui.app import SamplescopeApp
from tui.panel.toggle import Toggle

pytestmark = pytest.mark.anyio

SIZE = (120, 40)


def _fake(tmp_path: Path) -> FakeBackend:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF not really a model")
    fake = FakeBackend(min_reply_tokens=0)
    fake._info = replace(fake.info, path=str(model))
    return fake


async def test_a_beam_search_reply_brings_its_beams_as_branches(
    tmp_path: Path, store: ChatStore
) -> None:
    app = SamplescopeApp(_fake(tmp_path), max_tokens=12, cursor_blink=False, store=store)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        width = app.query_one("#toggle-beam_width", Toggle)
        width.action_cycle(1)
        width.action_cycle(1)  # off → 2 → 3
        await pilot.pause()
        assert chat_of(app).beam_width == 3
        finished = await send_message(pilot, app, "tell me about the cat")
        expected = beam_search(
            FakeBackend(min_reply_tokens=0),
            app.conversation.messages[:-1],
            app.live.current,
            width=3,
            max_tokens=12,
        )
        reply = app.conversation.replies[-1]
        assert finished.token_ids == expected.beams[0].token_ids
        assert [tuple(t.step.token_id for t in b.tokens) for b in reply.tree] == [
            beam.token_ids for beam in expected.beams
        ]
        assert all(branch.parent is reply for branch in reply.tree[1:])
        assert reply.text == finished.text == app.conversation.messages[-1].content
        # Stored: the best beam is the turn's reply, the others its branches.
        recorder = app.conversation.recorder
        assert recorder is not None and recorder.chat_id is not None
        turn = store.load_chat(recorder.chat_id).messages[-1]
        assert turn.reply is not None and turn.reply.id == reply.branch_id
        assert [b.id for b in turn.branches] == [b.branch_id for b in reply.tree]
        assert "branch 1 of 3" in str(app.query_one("#transcript").border_subtitle)
        notes = [str(w.content) for w in app.query("#transcript .note").results(Static)]
        assert any(n.startswith("beam search: 3 beams kept (logprob ") for n in notes), notes

        # Off again (3 → 4 → off): the next reply is sampled.
        width.action_cycle(1)
        width.action_cycle(1)
        await pilot.pause()
        assert chat_of(app).beam_width == 0
        await send_message(pilot, app, "and the dog?")
        assert len(app.conversation.replies[-1].tree) == 1


async def test_a_beam_search_at_temperature_zero_says_why_it_cannot_run(tmp_path: Path) -> None:
    app = SamplescopeApp(_fake(tmp_path), max_tokens=12, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        app.live.current = app.live.current.with_changes(temperature=0.0)
        app.query_one("#toggle-beam_width", Toggle).action_cycle(1)
        await pilot.pause()
        finished = await send_message(pilot, app, "tell me about the cat")
        assert finished.reason == "error"
        assert finished.error is not None and "temperature above 0" in finished.error


async def test_beam_search_keeps_the_banned_phrases_out_of_every_beam(tmp_path: Path) -> None:
    app = SamplescopeApp(_fake(tmp_path), max_tokens=12, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        chat_of(app).set_bans(PhraseBans((" the", " cat")))
        app.query_one("#toggle-beam_width", Toggle).action_cycle(1)
        await pilot.pause()
        await send_message(pilot, app, "tell me about the cat")
        tree = app.conversation.replies[-1].tree
        assert len(tree) == 2
        assert all(" the" not in b.text and " cat" not in b.text for b in tree)
