"""A reply's branches in the app, on the real default model: moving between them,
regenerate adding one, and a reopened chat inspected and branched again."""

from __future__ import annotations

import pytest
from textual.widgets import OptionList

from backend.session.llama_backend import LlamaBackend
from backend.store.store import ChatStore
from tests.helpers import chat_of, nth_reply_finished, reopen_chat, send_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.reply_view import FORK_MARK, ReplyView
from tui.chat.transcript import Transcript
from tui.widgets.alternatives import AlternativesScreen
from tui.widgets.prob_panel import ProbPanel

pytestmark = pytest.mark.anyio

SIZE = (120, 36)
INDEX = 3  # the fourth token of the reply


def _followed(store: ChatStore, chat_id: int) -> tuple[int, str]:
    """The stored id and text of the branch the chat's last turn follows."""
    turn = store.load_chat(chat_id).messages[-1]
    assert turn.reply is not None
    return turn.reply.id, turn.content


def _shows(app: SamplescopeApp, text: str) -> bool:
    """Whether the last reply is drawn as `text` (fork markers, wrapping and the
    finish label aside)."""
    drawn = app.query(ReplyView).last().plain_text()
    for count in range(2, 10):
        drawn = drawn.replace(f"{FORK_MARK}{count}", "")
    words = text.split()
    return drawn.split()[: len(words)] == words


async def _choose_alternative(pilot: object, app: SamplescopeApp, number: int, rank: int) -> None:
    """Enter on token INDEX of reply `number`; pick the candidate of that rank (from 1)."""
    transcript = app.query_one(Transcript)
    transcript.focus()
    transcript.select(number, INDEX)
    await pilot.press("enter")  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: isinstance(app.screen, AlternativesScreen))  # type: ignore[arg-type]
    await pilot.press(*["down"] * (rank - 1), "enter")  # type: ignore[attr-defined]


async def test_moving_back_and_forth_between_branches(
    llama_backend: LlamaBackend, store: ChatStore
) -> None:
    llama_backend.reset()
    app = SamplescopeApp(llama_backend, max_tokens=16, cursor_blink=False, store=store)
    async with app.run_test(size=SIZE) as pilot:
        first = await send_message(pilot, app, "Name three colours.")
        await _choose_alternative(pilot, app, 0, 2)
        second = await nth_reply_finished(pilot, app, 2)
        [chat] = store.list_chats()
        root, branch = store.load_chat(chat.id).messages[-1].branches
        assert _followed(store, chat.id) == (branch.id, second.text)
        assert f"{FORK_MARK}2" in app.query(ReplyView).last().plain_text()

        # Back to the first branch: its text, its records, and the store follows it.
        app.query_one(Transcript).focus()
        await pilot.press("less_than_sign")
        assert chat_of(app).conversation.replies[-1].text == first.text
        assert _shows(app, first.text)
        assert chat_of(app).conversation.messages[-1].content == first.text
        assert _followed(store, chat.id) == (root.id, first.text)
        assert chat_of(app).cursor == (0, INDEX)  # where the two part
        probs = app.query_one("#probs", ProbPanel)
        assert probs.step is chat_of(app).conversation.replies[-1].tokens[INDEX].step
        assert probs.step.token_id == first.token_ids[INDEX]

        # Forward again, then up to the parent.
        await pilot.press("greater_than_sign")
        assert chat_of(app).conversation.replies[-1].text == second.text and _shows(
            app, second.text
        )
        assert _followed(store, chat.id) == (branch.id, second.text)
        await pilot.press("u")
        assert chat_of(app).conversation.replies[-1].text == first.text
        assert _followed(store, chat.id) == (root.id, first.text)

        # The conversation goes on from the branch on screen.
        await send_message(pilot, app, "And one more?")
        record = store.load_chat(chat.id)
        assert [m.content for m in record.messages[:2]] == ["Name three colours.", first.text]
        assert chat_of(app).conversation.messages[1].content == first.text


async def test_regenerate_adds_a_branch(llama_backend: LlamaBackend, store: ChatStore) -> None:
    llama_backend.reset()
    app = SamplescopeApp(llama_backend, max_tokens=12, cursor_blink=False, store=store)
    async with app.run_test(size=SIZE) as pilot:
        first = await send_message(pilot, app, "Say something about rivers.")
        app.live.current = app.live.current.with_changes(temperature=1.5, top_k=0)
        await pilot.press("ctrl+r")
        second = await nth_reply_finished(pilot, app, 2)
        assert second.token_ids != first.token_ids
        [chat] = store.list_chats()
        turn = store.load_chat(chat.id).messages[-1]
        assert [b.token_ids for b in turn.branches] == [first.token_ids, second.token_ids]
        assert turn.reply is not None and turn.reply.id == turn.branches[1].id
        assert (
            len(chat_of(app).conversation.replies) == 1
            and len(chat_of(app).conversation.replies[-1].tree) == 2
        )

        # The old text is a key away.
        await pilot.press("ctrl+t", "less_than_sign")
        assert chat_of(app).conversation.replies[-1].text == first.text
        assert _followed(store, chat.id) == (turn.branches[0].id, first.text)


async def test_a_reopened_chat_is_inspectable_and_branchable(
    llama_backend: LlamaBackend, store: ChatStore
) -> None:
    llama_backend.reset()
    app = SamplescopeApp(llama_backend, max_tokens=16, cursor_blink=False, store=store)
    async with app.run_test(size=SIZE) as pilot:
        first = await send_message(pilot, app, "Name three colours.")
        live_steps = [t.step for t in chat_of(app).conversation.replies[-1].tokens]
        await reopen_chat(pilot, app)

        # The reply is back with every step's record: the panel shows them.
        [reply] = chat_of(app).conversation.replies
        assert reply.text == first.text
        assert [t.step.token_id for t in reply.tokens] == list(first.token_ids)
        transcript = app.query_one(Transcript)
        transcript.focus()
        transcript.select(0, INDEX)
        await pilot.pause()
        probs = app.query_one("#probs", ProbPanel)
        assert probs.step is not None
        stored, live = probs.step, live_steps[INDEX]
        assert list(stored.table.token_ids) == list(live.table.token_ids)
        assert stored.table.prob_after == pytest.approx(live.table.prob_after, abs=1e-6)

        # Branch in it: the alternatives list, then a new branch of the stored reply.
        transcript.select(0, INDEX)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AlternativesScreen))
        assert app.screen.query_one(OptionList).option_count == len(live.table.token_ids) + 1
        await pilot.press("down", "enter")
        second = await nth_reply_finished(pilot, app, 2)
        assert second.token_ids[:INDEX] == first.token_ids[:INDEX]
        assert second.token_ids[INDEX] == int(live.table.token_ids[1])

    [chat] = store.list_chats()
    turn = store.load_chat(chat.id).messages[-1]
    root, branch = turn.branches
    assert (branch.parent_id, branch.fork_at) == (root.id, INDEX)
    assert branch.token_ids == second.token_ids
    assert turn.reply is not None and turn.reply.id == branch.id
    assert turn.content == second.text


async def test_an_alternative_in_an_earlier_reply_starts_a_new_continuation(
    llama_backend: LlamaBackend, store: ChatStore
) -> None:
    llama_backend.reset()
    app = SamplescopeApp(llama_backend, max_tokens=12, cursor_blink=False, store=store)
    async with app.run_test(size=SIZE) as pilot:
        first = await send_message(pilot, app, "Name three colours.")
        later = await send_message(pilot, app, "And three animals?")
        [chat] = store.list_chats()
        old_first, old_later = (r.id for r in store.load_chat(chat.id).replies)

        await _choose_alternative(pilot, app, 0, 2)
        branch = await nth_reply_finished(pilot, app, 3)
        assert branch.token_ids[:INDEX] == first.token_ids[:INDEX] != branch.token_ids
        # The screen follows the new branch: the turns after reply 1 are cut.
        assert [m.content for m in chat_of(app).conversation.messages] == [
            "Name three colours.",
            branch.text,
        ]
        assert len(chat_of(app).conversation.replies) == 1 and len(app.query(ReplyView)) == 1
        assert _shows(app, branch.text)
        record = store.load_chat(chat.id)
        assert [m.content for m in record.messages] == ["Name three colours.", branch.text]

        # The conversation goes on from the new branch; the old turns stay stored.
        birds = await send_message(pilot, app, "And three birds?")
        record = store.load_chat(chat.id)
        new_path = ["Name three colours.", branch.text, "And three birds?", birds.text]
        assert [m.content for m in record.messages] == new_path
        assert store.list_chats()[0].message_count == 6

        # "<" on reply 1 goes back to its first branch, with the turns that followed it.
        transcript = app.query_one(Transcript)
        transcript.focus()
        transcript.select(0, 0)
        await pilot.press("less_than_sign")
        old_path = ["Name three colours.", first.text, "And three animals?", later.text]
        assert [m.content for m in chat_of(app).conversation.messages] == old_path
        assert [r.text for r in chat_of(app).conversation.replies] == [first.text, later.text]
        assert chat_of(app).cursor == (0, INDEX)
        old = store.load_chat(chat.id)
        assert [r.id for r in old.replies] == [old_first, old_later]
        # ">" comes back to the new branch and its turns.
        await pilot.press("greater_than_sign")
        assert [m.content for m in chat_of(app).conversation.messages] == new_path
        assert [m.content for m in store.load_chat(chat.id).messages] == new_path
