"""What if on the fake backend: entering, following the cursor, leaving, refusing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from textual.pilot import Pilot

from sampling.rng import make_source
from tests.helpers import chat_of, wait_until
from tests.tui.test_tui_snapshots import SIZE, TOP_P_SETTINGS, fake_backend, make_app, send
from tui.app import SamplescopeApp
from tui.chat.transcript import Transcript

pytestmark = pytest.mark.anyio


async def test_w_follows_the_cursor_and_esc_leaves_what_if_before_the_cursor() -> None:
    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        whatif = chat_of(app).whatif
        assert (
            app.chat_screen.check_action("whatif_branch", ()) is False
        )  # `b` hidden until what-if
        await pilot.press("ctrl+t", "left", "w")
        await pilot.pause()
        reply = chat_of(app).conversation.replies[-1]
        assert whatif.active and whatif.target == (0, len(reply.tokens) - 2)
        assert (
            whatif.source == "memory" and app.chat_screen.check_action("whatif_branch", ()) is True
        )
        assert whatif.panel.display and not app.query_one("#probs").display
        step = whatif.step
        assert step is not None
        assert np.array_equal(step.table.prob_after, reply.tokens[-2].step.table.prob_after)

        await pilot.press("left")  # what-if follows the token cursor
        await pilot.pause()
        assert whatif.target == (0, len(reply.tokens) - 3)

        await pilot.press("escape")
        assert not whatif.active and chat_of(app).cursor is not None
        assert app.query_one("#probs").display and not whatif.panel.display
        await pilot.press("escape")
        assert chat_of(app).cursor is None


async def test_w_needs_a_selected_token_and_a_step_beyond_memory_needs_a_saved_chat() -> None:
    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        whatif = chat_of(app).whatif
        app.chat_screen.action_whatif()
        assert not whatif.active  # no token selected: a notice says how

        whatif.keeper.begin(None)  # as if the reply's steps were beyond the budget
        app.query_one(Transcript).select(0, 2)
        app.chat_screen.action_whatif()
        await pilot.pause()
        assert whatif.active and whatif.step is None and not whatif.recomputing
        assert whatif.source.startswith("nowhere: this chat is not saved")
        app.chat_screen.action_whatif()  # again: off
        assert not whatif.active


async def whatif_on_the_last_token(pilot: Pilot[Any], app: SamplescopeApp) -> None:
    """Send a message, wait for the reply, then what-if on its last token."""
    await send(pilot, app, "hello there")
    await wait_until(
        pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
    )
    await pilot.press("ctrl+t", "left", "w")
    await pilot.pause()
    assert chat_of(app).whatif.active


async def test_a_reply_starting_leaves_what_if() -> None:
    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await whatif_on_the_last_token(pilot, app)
        app.chat_screen.action_regenerate()
        await pilot.pause()
        assert not chat_of(app).whatif.active
        await wait_until(
            pilot,
            lambda: not chat_of(app).generating and len(chat_of(app).conversation.finished) == 2,
        )
        # The new reply's steps are in memory, the old reply's are gone.
        assert chat_of(app).whatif.keeper.get(chat_of(app).conversation.replies[-1], 0) is not None


async def test_a_new_chat_leaves_what_if() -> None:
    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await whatif_on_the_last_token(pilot, app)
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert not chat_of(app).whatif.active and app.query_one("#probs").display


async def test_a_redraw_with_nothing_changed_does_not_recompute_the_step() -> None:
    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await whatif_on_the_last_token(pilot, app)
        whatif = chat_of(app).whatif
        step = whatif.step
        assert step is not None
        chat_of(app).flush_now()
        assert whatif.step is step
        app.apply_setting("top_k", 3)
        await pilot.pause()
        assert whatif.step is not step and whatif.step is not None
        assert whatif.step.n_kept <= 3


async def test_what_if_with_the_steps_own_settings_draws_the_stored_token() -> None:
    """The step's own uniform is reused: under its own settings every step of a sampled
    reply draws the stored token; under other settings, what that randomness picks."""
    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        reply = chat_of(app).conversation.replies[-1]
        assert app.live.current.temperature > 0 and len(reply.tokens) > 5
        whatif = chat_of(app).whatif
        drawn = []
        for index, token in enumerate(reply.tokens):
            app.query_one(Transcript).select(0, index)
            app.chat_screen.action_whatif()
            await pilot.pause()
            assert whatif.target == (0, index) and whatif.step is not None
            assert whatif.step.draw == token.step.draw is not None
            drawn.append(whatif.step.token_id)
            app.chat_screen.action_whatif()
        assert drawn == [token.step.token_id for token in reply.tokens]

        app.query_one(Transcript).select(0, 3)
        app.chat_screen.action_whatif()
        app.apply_setting("temperature", 0.0)  # greedy: the argmax, whatever the uniform
        await pilot.pause()
        step = whatif.step
        assert step is not None and step.token_id == int(step.table.token_ids[0])


async def test_another_seed_draws_a_fresh_uniform_and_says_so() -> None:
    """The seed is a difference what-if makes: another seed draws its own uniform for
    the step (the header says so), the step's own seed its stored one."""
    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await whatif_on_the_last_token(pilot, app)
        whatif = chat_of(app).whatif
        assert whatif.target is not None
        index = whatif.target[1]
        stored = chat_of(app).conversation.replies[0].tokens[index].step
        assert whatif.step is not None and whatif.step.draw == stored.draw
        own = app.live.current.seed
        for seed in (own + 1, own + 2):
            app.apply_setting("seed", seed)
            await pilot.pause()
            assert whatif.step is not None
            fresh = make_source(app.live.current.rng, seed).uniforms(index + 1)[-1]
            assert whatif.step.draw == fresh != stored.draw
            header = str(whatif.panel.header.render())
            assert f"seed {own}→{seed}" in header
            assert f"a fresh draw: seed {seed}'s uniform for this token" in header
        app.apply_setting("seed", own)
        await pilot.pause()
        assert whatif.step is not None and whatif.step.draw == stored.draw
        assert "fresh draw" not in str(whatif.panel.header.render())


async def test_a_step_not_recomputed_says_why_once() -> None:
    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        whatif = chat_of(app).whatif
        whatif.keeper.begin(None)  # as if the reply's steps were beyond the budget
        app.query_one(Transcript).select(0, 2)
        app.chat_screen.action_whatif()
        await pilot.pause()
        assert whatif.step is None and whatif.source.startswith("nowhere")
        # The header says it; the bars' place below stays empty rather than repeat it.
        assert whatif.source in str(whatif.panel.header.render())
        assert not whatif.panel.probs.display
        # Nothing to branch from or copy: b and y say so, not "what if on a token first".
        told: list[str] = []
        app.notify = lambda message, **_: told.append(message)  # type: ignore[method-assign]
        app.chat_screen.action_whatif_branch()
        app.chat_screen.action_whatif_command()
        assert told == ["The what-if shows no step: its header says why."] * 2


def test_another_chain_order_is_one_short_difference() -> None:
    from sampling.settings.record import SamplerSettings
    from tui.chat.whatif_panel import settings_diff

    first = SamplerSettings(temperature=0.7)  # the default order: the temperature first
    order = (*(name for name in first.order if name != "temperature"), "temperature")
    last = first.with_changes(temperature=0.8, samplers=order)
    assert settings_diff(first, first) == []
    changes = settings_diff(first, last)
    assert "temperature 0.7→0.8" in changes
    assert [c for c in changes if c.startswith("order")] == ["order t-first→t-last"]


async def test_y_copies_a_prompt_with_brackets_as_text() -> None:
    """The line copied holds the user's prompt: the notice shows it literally, where
    markup would have failed on its "[/]" and stopped the app."""
    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    copied: list[str] = []
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "say [/] and [bold]hi")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        await pilot.press("ctrl+t", "home", "w")
        await wait_until(pilot, lambda: chat_of(app).whatif.step is not None)
        await pilot.press("y")
        await wait_until(pilot, lambda: bool(copied))
        await pilot.pause(0.3)  # the notice is drawn
        assert "say [/] and [bold]hi" in copied[0]
        [notice] = [n for n in app._notifications if n.message == copied[0]]
        assert not notice.markup
