"""The contrast model from the command palette (the fake backend as both models): "Load
a contrast model" opens the model picker and loads the file chosen on a worker, which
posts `ContrastLoaded`; "Drop the contrast model" posts `ContrastDropped`; a model that
does not fit posts `ContrastFailed`, told in one line while the chat goes on; a
contrast model given at the start goes beside every model the picker opens; and
served, the picker's box opens nothing outside samplescope's folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import Input

from backend.session.backend import SessionBackend
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, run_command, send_message, served_folders, wait_until
from tests.tiny_models import spm_vocab, write_tiny_llama
from tui.app import SamplescopeApp
from tui.models.contrast import PICKER_TITLE, ContrastDropped, ContrastFailed, ContrastLoaded
from tui.models.picker import ModelPickerScreen
from tui.widgets.status_line import StatusLine

pytestmark = pytest.mark.anyio

SIZE = (120, 36)
CONTRASTED = DEFAULT_CHAT_SETTINGS.with_changes(contrast_beta=0.5)
CONTRAST_MESSAGES = (ContrastLoaded, ContrastFailed, ContrastDropped)


class Recorder:
    """The contrast messages the app received, in order, and its notices."""

    def __init__(self, app: SamplescopeApp) -> None:
        self.messages: list[Message] = []
        self.notes: list[str] = []
        app.notify = lambda message, **_: self.notes.append(str(message))  # type: ignore[method-assign]

    def hook(self, message: Message) -> None:
        if isinstance(message, CONTRAST_MESSAGES):
            self.messages.append(message)

    @property
    def kinds(self) -> list[type[Message]]:
        return [type(message) for message in self.messages]


def palette_titles(app: SamplescopeApp) -> list[str]:
    return [command.title for command in app.get_system_commands(app.screen)]


async def pick_file(pilot: Pilot[Any], app: SamplescopeApp, path: Path) -> None:
    """In the picker: the file's path typed, then Enter."""
    await wait_until(pilot, lambda: isinstance(app.screen, ModelPickerScreen))
    box = app.screen.query_one("#model-filter", Input)
    box.focus()
    box.value = str(path)
    await pilot.press("enter")


def fake_at(path: Path, **options: object) -> SessionBackend:
    return FakeBackend(path=str(path), **options)


async def test_load_then_drop_a_contrast_model_from_the_palette(tmp_path: Path) -> None:
    small = write_tiny_llama(tmp_path / "small.gguf", spm_vocab(400), seed=1)
    opened: list[Path] = []

    def open_contrast(path: Path) -> SessionBackend:
        opened.append(path)
        return fake_at(path)

    app = SamplescopeApp(
        FakeBackend(),
        settings=CONTRASTED,
        max_tokens=8,
        cursor_blink=False,
        list_models=tuple,
        open_contrast=open_contrast,
    )
    seen = Recorder(app)
    async with app.run_test(size=SIZE, message_hook=seen.hook) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        titles = palette_titles(app)
        assert "Load a contrast model" in titles and "Drop the contrast model" not in titles

        await run_command(pilot, app, "Load a contrast model")
        assert isinstance(app.screen, ModelPickerScreen)
        assert str(app.screen.query_one("#model-picker-title").render()) == PICKER_TITLE
        await pick_file(pilot, app, small)
        await wait_until(pilot, lambda: bool(seen.messages))
        assert seen.kinds == [ContrastLoaded] and opened == [small]
        backend = chat_of(app).runner.backend
        assert backend is not None and backend.contrast is not None
        assert backend.info.contrast_model == str(small.resolve())
        assert app.query_one(StatusLine).state.contrast == "small"
        assert app.runner.loading is None
        assert seen.notes[-1].startswith("Contrast model small loaded")
        reply = await send_message(pilot, app, "the cat")
        assert reply.error is None
        steps = [token.step for token in chat_of(app).conversation.replies[-1].tokens]
        assert all("contrast" in step.reports for step in steps)

        assert "Drop the contrast model" in palette_titles(app)
        await run_command(pilot, app, "Drop the contrast model")
        await wait_until(pilot, lambda: len(seen.messages) == 2)
        assert seen.kinds == [ContrastLoaded, ContrastDropped]
        assert backend.contrast is None and not backend.info.contrast_model
        assert not app.query_one(StatusLine).state.contrast
        assert "Drop the contrast model" not in palette_titles(app)
        await send_message(pilot, app, "the dog")
        steps = [token.step for token in chat_of(app).conversation.replies[-1].tokens]
        assert not any("contrast" in step.reports for step in steps)


async def test_a_contrast_model_that_does_not_fit_is_one_line_and_the_chat_goes_on(
    tmp_path: Path,
) -> None:
    small = write_tiny_llama(tmp_path / "small.gguf", spm_vocab(400), seed=1)
    app = SamplescopeApp(
        FakeBackend(n_ctx=2048),
        cursor_blink=False,
        max_tokens=8,
        list_models=tuple,
        open_contrast=lambda path: fake_at(path, n_ctx=1024),
    )
    seen = Recorder(app)
    async with app.run_test(size=SIZE, message_hook=seen.hook) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        await run_command(pilot, app, "Load a contrast model")
        await pick_file(pilot, app, small)
        await wait_until(pilot, lambda: bool(seen.messages))
        assert seen.kinds == [ContrastFailed]
        error = "the model's context is 2048 tokens and the contrast model's 1024"
        assert seen.notes[-1] == (
            f"Could not load the contrast model: {error}: contrast needs the same (--ctx)."
            " The chat goes on without one."
        )
        backend = chat_of(app).runner.backend
        assert backend is not None and backend.contrast is None
        assert app.runner.loading is None
        assert (await send_message(pilot, app, "the cat")).error is None


async def test_a_second_contrast_model_that_does_not_fit_leaves_the_first(
    tmp_path: Path,
) -> None:
    first = tmp_path / "first.gguf"
    wide = write_tiny_llama(tmp_path / "wide.gguf", spm_vocab(400), seed=1)
    app = SamplescopeApp(
        FakeBackend(n_ctx=2048),
        cursor_blink=False,
        list_models=tuple,
        open_contrast=lambda path: fake_at(path, n_ctx=2048 if path == first else 4096),
        contrast_model=first,
    )
    seen = Recorder(app)
    async with app.run_test(size=SIZE, message_hook=seen.hook) as pilot:
        await wait_until(pilot, lambda: bool(seen.messages))
        await run_command(pilot, app, "Load a contrast model")
        await pick_file(pilot, app, wide)
        await wait_until(pilot, lambda: len(seen.messages) == 2)
        assert seen.kinds == [ContrastLoaded, ContrastFailed]
        assert seen.notes[-1].endswith("The chat goes on with first.")
        backend = chat_of(app).runner.backend
        assert backend is not None and backend.info.contrast_model == str(first.resolve())
        assert app.query_one(StatusLine).state.contrast == "first"
        assert app.contrast_models.wanted == first.resolve()


async def test_a_contrast_model_given_at_the_start_follows_the_model_picked(
    tmp_path: Path,
) -> None:
    small = tmp_path / "small.gguf"
    other = write_tiny_llama(tmp_path / "other.gguf", spm_vocab(400), seed=2)
    app = SamplescopeApp(
        FakeBackend(),
        cursor_blink=False,
        list_models=tuple,
        open_model=lambda path: fake_at(path),
        open_contrast=lambda path: fake_at(path),
        contrast_model=small,
    )
    seen = Recorder(app)
    async with app.run_test(size=SIZE, message_hook=seen.hook) as pilot:
        await wait_until(pilot, lambda: bool(seen.messages))
        assert seen.kinds == [ContrastLoaded]
        first = chat_of(app).runner.backend
        assert first is not None and first.info.contrast_model == str(small.resolve())
        await pilot.press("f7")
        await pick_file(pilot, app, other)
        await wait_until(pilot, lambda: len(seen.messages) == 2)
        assert seen.kinds == [ContrastLoaded, ContrastLoaded]
        backend = chat_of(app).runner.backend
        assert backend is not first and backend is not None
        assert backend.info.path == str(other)
        assert backend.info.contrast_model == str(small.resolve())
        assert app.query_one(StatusLine).state.contrast == "small"


async def test_served_the_contrast_pickers_box_opens_nothing_outside_its_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served_folders(tmp_path, monkeypatch)
    outside = write_tiny_llama(tmp_path / "outside.gguf", spm_vocab(400), seed=1)
    opened: list[Path] = []
    app = SamplescopeApp(
        FakeBackend(),
        cursor_blink=False,
        list_models=tuple,
        open_contrast=lambda path: opened.append(path) or fake_at(path),  # type: ignore[func-returns-value]
    )
    seen = Recorder(app)
    async with app.run_test(size=SIZE, message_hook=seen.hook) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        await run_command(pilot, app, "Load a contrast model")
        await pick_file(pilot, app, outside)
        await wait_until(pilot, lambda: bool(seen.notes))
        assert any("the served app opens files only in" in note for note in seen.notes)
        assert isinstance(app.screen, ModelPickerScreen)
        assert not opened and not seen.messages
