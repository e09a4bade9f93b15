"""Snapshots of the app on the fake backend: fixed size, no cursor blink, no clocks.

Regenerate the SVGs with `pytest tests/test_tui_snapshots.py --snapshot-update` and
look at them before committing.
"""

from __future__ import annotations

from textual.pilot import Pilot
from textual.widgets import OptionList
from textual.widgets._footer import FooterKey

from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.fake_backend import FakeBackend
from tests.helpers import StepClock, chat_of, wait_until
from tui.app import SamplescopeApp
from tui.cli.commands.app import backend_factory, build_app_parser

SIZE = (120, 36)
# min-p off so that top-p makes the cut the panel shows.
TOP_P_SETTINGS = DEFAULT_CHAT_SETTINGS.with_changes(min_p=0.0, top_k=0, top_p=0.8)


def make_app(fake: FakeBackend, **kwargs: object) -> SamplescopeApp:
    """An app on `fake` with a fixed clock and no cursor blink."""
    return SamplescopeApp(fake, clock=StepClock(), cursor_blink=False, **kwargs)  # type: ignore[arg-type]


def fake_backend(**kwargs: object) -> FakeBackend:
    """A fake backend whose stats come from a fixed clock."""
    return FakeBackend(clock=StepClock(), **kwargs)  # type: ignore[arg-type]


async def send(pilot: Pilot[object], app: SamplescopeApp, text: str) -> None:
    """Wait for the model, type `text` and press Enter."""
    await wait_until(pilot, lambda: chat_of(app).ready)
    await pilot.press(*text, "enter")


async def open_alternatives(pilot: Pilot[object], app: SamplescopeApp, back: int) -> None:
    """Select the token `back` places before the last, press Enter, and wait until its
    alternatives are listed with the keyboard on them.

    Pilot's pause between keys ends when the process looks idle (little CPU time used
    while it sleeps): on a loaded machine it ends early, so a key must not depend on
    a screen that is still being pushed; wait for it instead."""
    await pilot.press("ctrl+t", *["left"] * back)
    tokens = len(chat_of(app).conversation.replies[-1].tokens)
    await wait_until(
        pilot,
        lambda: (
            chat_of(app).cursor == (len(chat_of(app).conversation.replies) - 1, tokens - 1 - back)
        ),
    )
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(app.focused, OptionList))


def test_empty_app(snap_compare: object) -> None:
    async def ready(pilot: Pilot[object]) -> None:
        app = pilot.app
        assert isinstance(app, SamplescopeApp)
        await wait_until(pilot, lambda: chat_of(app).ready)

    assert snap_compare(make_app(fake_backend()), terminal_size=SIZE, run_before=ready)  # type: ignore[operator]


def test_mid_decode_with_top_p_cutoff(snap_compare: object) -> None:
    fake = fake_backend(pause_after_tokens=24)
    app = make_app(fake, settings=TOP_P_SETTINGS)

    async def mid_decode(pilot: Pilot[object]) -> None:
        await send(pilot, app, "tell me about the cat")
        await wait_until(pilot, fake.paused.is_set)
        await wait_until(pilot, lambda: len(chat_of(app).conversation.replies[-1].tokens) == 24)
        app.chat_screen.action_toggle_colour()
        chat_of(app).flush_now()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=mid_decode)  # type: ignore[operator]


def test_prefill_in_progress(snap_compare: object) -> None:
    fake = fake_backend(prefill_chunk=4, pause_after_chunks=3)
    app = make_app(fake)
    prompt = "please write a long story about a small red cat that sat on a mat by the river"

    async def mid_prefill(pilot: Pilot[object]) -> None:
        await send(pilot, app, prompt)
        await wait_until(pilot, fake.paused.is_set)
        await wait_until(pilot, lambda: chat_of(app).status.prefill_done == 12)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=mid_prefill)  # type: ignore[operator]


def test_selected_past_token(snap_compare: object) -> None:
    fake = fake_backend()
    app = make_app(fake, max_tokens=30, settings=TOP_P_SETTINGS)

    async def select(pilot: Pilot[object]) -> None:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        await pilot.press("ctrl+t", "left", "left", "left", "left", "left")
        await wait_until(
            pilot,
            lambda: (
                chat_of(app).cursor == (0, len(chat_of(app).conversation.replies[-1].tokens) - 6)
            ),
        )

    assert snap_compare(app, terminal_size=SIZE, run_before=select)  # type: ignore[operator]


def test_alternatives_of_a_past_token(snap_compare: object) -> None:
    fake = fake_backend()
    app = make_app(fake, max_tokens=30, settings=TOP_P_SETTINGS)

    async def alternatives(pilot: Pilot[object]) -> None:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        await open_alternatives(pilot, app, 5)

    assert snap_compare(app, terminal_size=SIZE, run_before=alternatives)  # type: ignore[operator]


def test_help_screen(snap_compare: object) -> None:
    app = make_app(fake_backend())

    async def help_screen(pilot: Pilot[object]) -> None:
        await wait_until(pilot, lambda: chat_of(app).ready)
        # The chat's footer rebuilds its keys once the chat is ready; a screen pushed
        # meanwhile leaves it empty beneath the help until the chat is shown again.
        await wait_until(pilot, lambda: bool(app.chat_screen.query(FooterKey)))
        await pilot.press("f1")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=help_screen)  # type: ignore[operator]


def test_bad_model_path(snap_compare: object) -> None:
    args = build_app_parser().parse_args(["--model", "/nonexistent/missing-model.gguf"])
    app = SamplescopeApp(
        backend_factory=backend_factory(args), clock=StepClock(), cursor_blink=False
    )

    async def failed(pilot: Pilot[object]) -> None:
        await wait_until(pilot, lambda: chat_of(app).status.phase == "error")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=failed)  # type: ignore[operator]


def test_fork_marker(snap_compare: object) -> None:
    fake = fake_backend()
    app = make_app(fake, max_tokens=30, settings=TOP_P_SETTINGS)

    async def branch(pilot: Pilot[object]) -> None:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        # The fifth token from the end: its second candidate makes a second branch.
        await open_alternatives(pilot, app, 4)
        await pilot.press("down", "enter")
        await wait_until(
            pilot,
            lambda: len(chat_of(app).conversation.finished) == 2 and not chat_of(app).generating,
        )
        await pilot.press("ctrl+t")
        await wait_until(
            pilot,
            lambda: (
                chat_of(app).cursor == (0, len(chat_of(app).conversation.replies[-1].tokens) - 1)
            ),
        )

    assert snap_compare(app, terminal_size=SIZE, run_before=branch)  # type: ignore[operator]
