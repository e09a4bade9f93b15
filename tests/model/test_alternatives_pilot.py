"""Choosing an alternative at a past token, on the real default model."""

from __future__ import annotations

import pytest
from textual.widgets import OptionList

from backend.session.llama_backend import LlamaBackend
from backend.store.store import ChatStore
from tests.helpers import chat_of, nth_reply_finished, send_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.transcript import Transcript
from tui.widgets.alternatives import AlternativesScreen

pytestmark = pytest.mark.anyio

SIZE = (120, 36)
INDEX = 3  # the fourth token of the reply


async def test_choosing_an_alternative_forces_it_continues_and_keeps_the_old_branch(
    llama_backend: LlamaBackend, store: ChatStore
) -> None:
    llama_backend.reset()
    app = SamplescopeApp(llama_backend, max_tokens=16, cursor_blink=False, store=store)
    async with app.run_test(size=SIZE) as pilot:
        first = await send_message(pilot, app, "Name three colours.")
        old = list(chat_of(app).conversation.replies[-1].tokens)
        step = old[INDEX].step
        transcript = app.query_one(Transcript)
        transcript.focus()
        transcript.select(0, INDEX)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AlternativesScreen))
        options = app.screen.query_one(OptionList)
        assert options.option_count == len(step.table.token_ids) + 1  # + re-sample
        # The most probable candidate the reply did not take.
        rank = next(
            rank for rank, token in enumerate(step.table.token_ids) if token != step.token_id
        )
        await pilot.press(*["down"] * rank, "enter")
        second = await nth_reply_finished(pilot, app, 2)
        wanted = int(step.table.token_ids[rank])
        assert second.token_ids[:INDEX] == first.token_ids[:INDEX]
        assert second.token_ids[INDEX] == wanted != first.token_ids[INDEX]
        reply = chat_of(app).conversation.replies[-1]
        assert [t.step.token_id for t in reply.tokens] == list(second.token_ids)
        assert [t.index for t in reply.tokens] == list(range(len(reply.tokens)))
        assert reply.tokens[INDEX].step.prob == pytest.approx(float(step.table.prob_after[rank]))
        assert chat_of(app).conversation.messages[-1].content == second.text
        assert (
            len(chat_of(app).conversation.replies) == 1
            and len(chat_of(app).conversation.finished) == 2
        )

        # "re-sample here" on the new reply: drawn again, deterministic for a seed.
        transcript.focus()
        transcript.select(0, INDEX + 1)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AlternativesScreen))
        await pilot.press("end", "enter")
        third = await nth_reply_finished(pilot, app, 3)
        assert third.token_ids[: INDEX + 1] == second.token_ids[: INDEX + 1]

    [chat] = store.list_chats()
    record = store.load_chat(chat.id)
    turn = record.messages[-1]
    assert [len(b.token_ids) for b in turn.branches] == [
        len(first.token_ids),
        len(second.token_ids),
        len(third.token_ids),
    ]
    root, branch, again = turn.branches
    assert (branch.parent_id, branch.fork_at) == (root.id, INDEX)
    assert (again.parent_id, again.fork_at) == (branch.id, INDEX + 1)
    assert turn.reply is not None and turn.reply.id == again.id
    assert turn.content == third.text
    assert branch.token_ids == second.token_ids
    records = store.load_steps(record, branch)
    assert [records[i].token_id for i in sorted(records)] == list(second.token_ids)
