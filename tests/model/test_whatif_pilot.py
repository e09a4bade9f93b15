"""What if on a past token, on the real default model: from memory, through the
replay path, with a slider moved, and turned into a branch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList

from backend.session.llama_backend import LlamaBackend
from backend.store.store import ChatStore
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.records import Step
from tests.helpers import chat_of, nth_reply_finished, reopen_chat, send_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.transcript import Transcript
from tui.panel.slider import Slider
from tui.widgets.alternatives import AlternativesScreen

pytestmark = pytest.mark.anyio

SIZE = (120, 36)
INDEX = 3  # the fourth token of the reply
# Nothing cut by default, so that top-k 3 is the cut.
SETTINGS = DEFAULT_CHAT_SETTINGS.with_changes(top_k=0, top_p=1.0, min_p=0.0)


def assert_same_step(got: Step, wanted: Step) -> None:
    """The same candidates, probabilities, kept count and cut, to the bit."""
    for name in ("token_ids", "logits", "prob_before", "prob_after", "kept"):
        assert np.array_equal(getattr(got.table, name), getattr(wanted.table, name)), name
    assert got.table.removed_by == wanted.table.removed_by
    assert (got.n_kept, got.cut_by, got.entropy) == (wanted.n_kept, wanted.cut_by, wanted.entropy)


async def whatif_at(pilot: Pilot[Any], app: SamplescopeApp, index: int) -> Step:
    """Select token `index` of the last reply, press `w`, wait for the recomputed step."""
    transcript = app.query_one(Transcript)
    transcript.focus()
    transcript.select(len(chat_of(app).conversation.replies) - 1, index)
    await pilot.pause()
    whatif = chat_of(app).whatif
    if not whatif.active:  # else what-if followed the cursor there
        await pilot.press("w")
    await wait_until(pilot, lambda: whatif.step is not None and not whatif.recomputing, 120)
    assert whatif.step is not None
    return whatif.step


async def test_whatif_with_the_steps_own_settings_reproduces_it_and_a_slider_recuts_it(
    llama_backend: LlamaBackend, store: ChatStore
) -> None:
    llama_backend.reset()
    app = SamplescopeApp(
        llama_backend, settings=SETTINGS, max_tokens=12, cursor_blink=False, store=store
    )
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "Name three colours.")
        stored = chat_of(app).conversation.replies[-1].tokens[INDEX].step
        whatif = chat_of(app).whatif
        step = await whatif_at(pilot, app, INDEX)
        assert whatif.source == "memory"
        assert_same_step(step, stored)
        # The step's own uniform, under its own settings, draws the stored token.
        assert (step.draw, step.token_id) == (stored.draw, stored.token_id)
        assert step.n_kept == llama_backend.info.n_vocab and step.cut_by == "none"
        assert "the step's own settings" in str(whatif.panel.header.render())

        slider = app.query_one("#slider-top_k", Slider)
        slider.focus()
        await pilot.press("right", "right", "right")
        await wait_until(pilot, lambda: app.live.current.top_k == 3)
        moved = whatif.step
        assert moved is not None and moved.n_kept <= 3 and moved.cut_by == "top_k"
        assert moved.draw == stored.draw  # the same randomness under other settings
        assert np.array_equal(moved.table.prob_before, stored.table.prob_before)
        assert "top_k 0→3" in str(whatif.panel.header.render())
        assert (
            not chat_of(app).generating and len(chat_of(app).conversation.finished) == 1
        )  # nothing was generated

        await pilot.press("escape")
        assert not whatif.active and chat_of(app).cursor is not None


async def test_whatif_beyond_the_memory_budget_replays_the_step_exactly(
    llama_backend: LlamaBackend, store: ChatStore
) -> None:
    llama_backend.reset()
    app = SamplescopeApp(
        llama_backend, settings=SETTINGS, max_tokens=12, cursor_blink=False, store=store
    )
    async with app.run_test(size=SIZE) as pilot:
        keeper = chat_of(app).whatif.keeper
        keeper.budget_bytes = 3 * (4 * llama_backend.info.n_vocab + 8 * 1024)  # ~3 steps
        await send_message(pilot, app, "Name three colours.")
        tokens = chat_of(app).conversation.replies[-1].tokens
        assert (
            1 <= len(keeper) <= 3
            and keeper.get(chat_of(app).conversation.replies[-1], INDEX) is None
        )
        whatif = chat_of(app).whatif

        # An old step: rebuilt through the replay path, the same as stored.
        step = await whatif_at(pilot, app, INDEX)
        assert whatif.source == "replay"
        assert_same_step(step, tokens[INDEX].step)

        # A recent step under other settings: from memory, then replayed, alike.
        app.apply_setting("top_k", 3)
        last = len(tokens) - 2
        from_memory = await whatif_at(pilot, app, last)
        assert whatif.source == "memory" and from_memory.cut_by == "top_k"
        await pilot.press("escape")
        keeper.begin(None)  # forget every kept step
        replayed = await whatif_at(pilot, app, last)
        assert whatif.source == "replay"
        assert_same_step(replayed, from_memory)
        assert replayed.token_id == from_memory.token_id


async def test_branch_from_whatif_takes_the_token_it_shows_and_adds_a_branch(
    llama_backend: LlamaBackend, store: ChatStore
) -> None:
    llama_backend.reset()
    app = SamplescopeApp(
        llama_backend, settings=SETTINGS, max_tokens=12, cursor_blink=False, store=store
    )
    async with app.run_test(size=SIZE) as pilot:
        first = await send_message(pilot, app, "Name three colours.")
        app.apply_setting("top_k", 3)
        app.apply_setting("seed", 7)
        step = await whatif_at(pilot, app, INDEX)
        await pilot.press("b")  # the candidates under these settings, ▶ highlighted
        await wait_until(pilot, lambda: isinstance(app.screen, AlternativesScreen))
        assert app.screen.query_one(OptionList).highlighted_option.id == f"token-{step.token_id}"
        await pilot.press("enter")
        second = await nth_reply_finished(pilot, app, 2)
        assert not chat_of(app).whatif.active
        assert second.token_ids[:INDEX] == first.token_ids[:INDEX]
        assert second.token_ids[INDEX] == step.token_id
        assert len(chat_of(app).conversation.replies) == 1

    [chat] = store.list_chats()
    turn = store.load_chat(chat.id).messages[-1]
    root, branch = turn.branches
    assert (branch.parent_id, branch.fork_at) == (root.id, INDEX)
    assert branch.token_ids == second.token_ids


async def test_whatif_on_a_reopened_chat_goes_through_replay_and_reproduces_the_step(
    llama_backend: LlamaBackend, store: ChatStore
) -> None:
    llama_backend.reset()
    app = SamplescopeApp(
        llama_backend, settings=SETTINGS, max_tokens=12, cursor_blink=False, store=store
    )
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "Name three colours.")
        live = chat_of(app).conversation.replies[-1].tokens[INDEX].step
        await reopen_chat(pilot, app)
        assert len(chat_of(app).conversation.replies) == 1

        whatif = chat_of(app).whatif
        step = await whatif_at(pilot, app, INDEX)
        assert whatif.source == "replay"  # a reopened reply's logits are not in memory
        assert step.token_id == live.token_id
        assert list(step.table.token_ids) == list(live.table.token_ids)
        assert step.table.prob_after == pytest.approx(live.table.prob_after, abs=1e-6)
        assert (step.n_kept, step.cut_by) == (live.n_kept, live.cut_by)
