"""The model picker (f7, and "Open a model" in the command palette): another model
opens without restarting, the chat goes on, a model that fails to load leaves the
app as it was. On the fake backend, one per model file."""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList

from backend.chat.compare import ColumnEvent
from backend.config.model_catalog import LocalModel
from backend.errors import ModelFileError
from backend.session.backend import SessionBackend
from backend.store.store import ChatStore
from tests.fake_backend import FakeBackend
from tests.helpers import (
    chat_of,
    nth_reply_finished,
    press_at_once,
    send_message,
    type_message,
    wait_until,
)
from tui.app import SamplescopeApp
from tui.models.picker import ModelPickerScreen
from tui.models.switch import carried_bias

pytestmark = pytest.mark.anyio

SIZE = (120, 36)


class NamedFake(FakeBackend):
    """The fake model under a file's name, remembering whether it was freed."""

    def __init__(self, path: Path, **options: object) -> None:
        super().__init__(**options)
        self._info = dataclasses.replace(self._info, name=path.stem, path=str(path))
        self.closed = False

    def close(self) -> None:
        self.closed = True


def listed(tmp_path: Path) -> list[LocalModel]:
    return [
        LocalModel("org/First-GGUF/first-Q4_K_M.gguf", tmp_path / "first.gguf", "huggingface",
                   2_000_000, "Q4_K_M", "llama", 2048, True),
        LocalModel("llama3.2:1b", tmp_path / "second.gguf", "ollama", 3_000_000, "Q8_0",
                   "llama", 4096, True),
        LocalModel("broken.gguf", tmp_path / "broken.gguf", "model_dirs", 10,
                   problem="not a GGUF file"),
        LocalModel("fails.gguf", tmp_path / "fails.gguf", "model_dirs", 4_000_000, "F16",
                   "llama", 512, False),
    ]  # fmt: skip


def picker_app(
    tmp_path: Path, first: SessionBackend, open_model: Callable[[Path], SessionBackend]
) -> SamplescopeApp:
    """The app on `first`, whose picker lists `listed(tmp_path)` and opens with `open_model`."""
    return SamplescopeApp(
        first,
        max_tokens=12,
        cursor_blink=False,
        list_models=lambda: listed(tmp_path),
        open_model=open_model,
    )


def make_app(tmp_path: Path, opened: list[Path], **options: object) -> SamplescopeApp:
    first = NamedFake(tmp_path / "first.gguf", **options)

    def open_model(path: Path) -> SessionBackend:
        opened.append(path)
        if path.name == "fails.gguf":
            raise ModelFileError(f"{path}: not a GGUF file (bad magic)")
        return NamedFake(path)

    return picker_app(tmp_path, first, open_model)


async def open_picker(pilot: object, app: SamplescopeApp) -> ModelPickerScreen:
    await pilot.press("f7")  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: isinstance(app.screen, ModelPickerScreen))  # type: ignore[arg-type]
    screen = app.screen
    assert isinstance(screen, ModelPickerScreen)
    await wait_until(pilot, lambda: screen.models != [])  # type: ignore[arg-type]
    return screen


async def test_f7_opens_a_listed_model_and_the_chat_goes_on(tmp_path: Path) -> None:
    opened: list[Path] = []
    app = make_app(tmp_path, opened)
    async with app.run_test(size=SIZE) as pilot:
        first = app.runner.backend
        assert isinstance(first, NamedFake)
        await send_message(pilot, app, "hello")
        picker = await open_picker(pilot, app)
        options = picker.query_one(OptionList)
        assert options.option_count == 5  # the four, then "Open a file…"
        assert "Open a file" in str(options.get_option_at_index(4).prompt)
        lines = [str(options.get_option_at_index(i).prompt) for i in range(4)]
        assert "(loaded)" in lines[0]
        assert "Q8_0 · llama · ctx 4096 · 3 MB · chat template · ollama" in lines[1]
        assert "cannot be read: not a GGUF file" in lines[2]
        assert options.get_option_at_index(2).disabled
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: chat_of(app).ready and app.runner.loading is None)
        assert opened == [tmp_path / "second.gguf"]
        assert app.screen is not picker
        second = app.runner.backend
        assert isinstance(second, NamedFake)
        assert second.info.name == "second"
        assert first.closed and not second.closed
        assert chat_of(app).status.model == "second"
        # the conversation stays, and the next reply is the new model's
        assert [m.content for m in chat_of(app).conversation.messages][:1] == ["hello"]
        finished = await send_message(pilot, app, "and now?")
        assert finished.reason in ("stop", "max_tokens") and finished.token_ids
        assert [m.role for m in chat_of(app).conversation.messages] == [
            "user",
            "assistant",
            "user",
            "assistant",
        ]
        assert chat_of(app).conversation.messages[0].content == "hello"
        assert second.context_used > 0
        assert len(chat_of(app).conversation.replies) == 2


async def test_a_model_that_fails_to_load_leaves_the_one_before(tmp_path: Path) -> None:
    opened: list[Path] = []
    app = make_app(tmp_path, opened)
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "hello")
        first = app.runner.backend
        await open_picker(pilot, app)
        await pilot.press("down", "down", "enter")  # past the disabled row
        await wait_until(pilot, lambda: app.runner.loading is None and chat_of(app).ready)
        assert opened == [tmp_path / "fails.gguf"]
        assert app.runner.backend is first
        assert isinstance(first, NamedFake) and not first.closed
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert errors == [
            f"Could not open fails.gguf: {tmp_path / 'fails.gguf'}: not a GGUF file (bad magic)."
            " The model before stays."
        ]
        finished = await send_message(pilot, app, "still here?")
        assert finished.reason in ("stop", "max_tokens") and finished.token_ids
        assert len(chat_of(app).conversation.replies) == 2


async def test_picking_a_model_during_a_reply_stops_it_first(tmp_path: Path) -> None:
    opened: list[Path] = []
    app = make_app(tmp_path, opened, pause_after_tokens=3)
    async with app.run_test(size=SIZE) as pilot:
        first = app.runner.backend
        assert isinstance(first, NamedFake)
        await type_message(pilot, app, "hello")
        await wait_until(pilot, lambda: first.paused.is_set())
        picker = await open_picker(pilot, app)
        picker.query_one(OptionList).highlighted = 1
        await pilot.press("enter")
        await wait_until(pilot, lambda: chat_of(app).ready and app.runner.loading is None)
        assert not chat_of(app).generating
        assert chat_of(app).conversation.finished[-1].reason == "cancelled"
        assert first.closed
        assert app.runner.backend is not first


async def test_escape_keeps_the_model_and_the_palette_offers_the_picker(tmp_path: Path) -> None:
    opened: list[Path] = []
    app = make_app(tmp_path, opened)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        first = app.runner.backend
        await open_picker(pilot, app)
        await pilot.press("escape")
        assert not isinstance(app.screen, ModelPickerScreen)
        assert app.runner.backend is first and opened == []
        await pilot.press("ctrl+p")
        await pilot.pause()
        await press_at_once(pilot, *"Open a model")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPickerScreen))


async def test_an_app_with_a_fixed_model_says_so() -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        await pilot.press("f7")
        await pilot.pause()
        assert not isinstance(app.screen, ModelPickerScreen)
        assert [n.message for n in app._notifications] == [
            "This app was started with a fixed model."
        ]


async def test_after_the_first_model_failed_to_load_the_picker_opens_another(
    tmp_path: Path,
) -> None:
    def broken() -> SessionBackend:
        raise ModelFileError("missing.gguf: no such file")

    app = SamplescopeApp(
        backend_factory=broken,
        max_tokens=12,
        cursor_blink=False,
        list_models=lambda: listed(tmp_path),
        open_model=NamedFake,
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).status.phase == "error")
        assert not chat_of(app).ready
        await open_picker(pilot, app)
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: chat_of(app).ready)
        assert chat_of(app).status.model == "second"
        finished = await send_message(pilot, app, "hello")
        assert finished.reason in ("stop", "max_tokens") and finished.token_ids


def slow_app(tmp_path: Path, gate: threading.Event) -> SamplescopeApp:
    """An app whose picked model loads only once `gate` is set."""
    first = NamedFake(tmp_path / "first.gguf")

    def open_model(path: Path) -> SessionBackend:
        gate.wait(30)
        return NamedFake(path)

    return picker_app(tmp_path, first, open_model)


LOADING = "A model is loading (llama3.2:1b): wait for it."


async def test_while_a_model_loads_every_key_that_would_start_a_job_says_so(
    tmp_path: Path,
) -> None:
    gate = threading.Event()
    app = slow_app(tmp_path, gate)
    async with app.run_test(size=SIZE) as pilot:
        try:
            await send_message(pilot, app, "hello")
            picker = await open_picker(pilot, app)
            picker.query_one(OptionList).highlighted = 1
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.runner.loading is not None)
            await pilot.press("ctrl+t", "left")
            for key in ("x", "enter", "w", "ctrl+r", "ctrl+d", "f8"):
                await pilot.press(key)
                await pilot.pause()
                assert app.screen is app.screen_stack[0], key
            assert not chat_of(app).whatif.active
            await pilot.press("escape")
            prompt = app.query_one("#prompt", Input)
            await press_at_once(pilot, *"more")
            await prompt.action_submit()
            await pilot.pause()
            said = [n.message for n in app._notifications]
            assert said.count(LOADING) == 7, said
            assert len(chat_of(app).conversation.replies) == 1 and not chat_of(app).generating
        finally:
            gate.set()
        await wait_until(pilot, lambda: chat_of(app).ready)
        finished = await send_message(pilot, app, "now?")
        assert finished.token_ids


async def test_replies_of_the_model_before_cannot_be_steered_and_saving_goes_on(
    tmp_path: Path, store: ChatStore
) -> None:
    for name in ("first.gguf", "second.gguf"):
        (tmp_path / name).write_bytes(b"GGUF" + name.encode())  # the store hashes the file
    opened: list[Path] = []
    app = make_app(tmp_path, opened)
    app.store = store
    refusal = (
        "Reply 1 was made by first.gguf, not by second.gguf: its tokens cannot be"
        " branched, explored or recomputed on this model"
    )
    second = str(tmp_path / "second.gguf")
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "hello")
        [old_chat] = store.list_chats()
        n_vocab = app.runner.backend.info.n_vocab  # type: ignore[union-attr]
        app.apply_settings(app.live.current.with_changes(logit_bias={5: -2.0, n_vocab + 3: 1.0}))
        picker = await open_picker(pilot, app)
        picker.query_one(OptionList).highlighted = 1
        await pilot.press("enter")
        await wait_until(pilot, lambda: chat_of(app).ready and app.runner.loading is None)
        assert app.live.current.logit_bias == ((5, -2.0),)
        assert (
            f"The logit bias now names second's tokens (1 kept; dropped #{n_vocab + 3}:"
            " not one token of second)." in [n.message for n in app._notifications]
        )
        await send_message(pilot, app, "and now?")
        assert [r.model for r in chat_of(app).conversation.replies] == [
            str(tmp_path / "first.gguf"),
            second,
        ]
        # the first reply, the model before's: no alternatives, explore, what-if
        await pilot.press("ctrl+t", "home")
        said = len(app._notifications)
        for key in ("enter", "x", "w"):
            await pilot.press(key)
            await pilot.pause()
            assert app.screen is app.screen_stack[0], key
        assert not chat_of(app).whatif.active
        assert [n.message for n in app._notifications][said:] == [refusal] * 3
        await pilot.press("escape")
        finished = await send_message(pilot, app, "still saving?")
        assert (
            chat_of(app).conversation.recorder is not None
            and chat_of(app).conversation.recorder.error is None
        )
        [new_chat] = [c for c in store.list_chats() if c.id != old_chat.id]
        stored = store.load_chat(new_chat.id)
        assert [m.content for m in stored.messages if m.role == "user"] == [
            "hello",
            "and now?",
            "still saving?",
        ]
        assert stored.replies[-1].token_ids == finished.token_ids
        # the chat of the model before, reopened: its replies are that model's; ctrl+r
        # on its last reply makes a new reply of this model, not a branch of it
        app.open_saved_chat(old_chat.id)
        await pilot.pause()
        assert chat_of(app).conversation.replies[0].model == str(tmp_path / "first.gguf")
        await pilot.press("ctrl+r")
        await nth_reply_finished(pilot, app, 4)
        assert (
            chat_of(app).conversation.replies[-1].model == second
            and chat_of(app).conversation.replies[-1].parent is None
        )
        assert chat_of(app).conversation.recorder.error is None
        stored = store.load_chat(old_chat.id)
        assert stored.replies[-1].model.path == second
        assert stored.replies[-1].token_ids == chat_of(app).conversation.finished[-1].token_ids


def test_a_logit_bias_is_carried_to_the_new_model_by_its_tokens_text() -> None:
    old = {5: b" hello", 9: b" world", 12: b"\xe2\x82", 40: b"zz"}
    new = {" hello": [7], " world": [3, 4], "zz": [700]}

    def encode(text: str) -> list[int]:
        return new.get(text, [])

    bias = ((5, -2.0), (9, 1.5), (12, 3.0), (40, -math.inf))
    carried, dropped = carried_bias(bias, old.__getitem__, encode, n_vocab=100)
    assert carried == ((7, -2.0),)
    assert dropped == (9, 12, 40)
    # without the tokenizers: the ids within the new vocabulary stay as they are
    carried, dropped = carried_bias(bias, None, None, n_vocab=10)
    assert carried == ((5, -2.0), (9, 1.5))
    assert dropped == (12, 40)


class Holder:
    """A consumer of a job that ignores its events."""

    ended = False

    def generation_event(self, column: int, event: object) -> None:
        pass

    def generation_ended(self, error: str | None) -> None:
        self.ended = True

    def paint(self) -> None:
        pass


async def test_a_switch_waits_until_no_job_uses_the_model(tmp_path: Path) -> None:
    idle_at_open: list[bool] = []
    app = make_app(tmp_path, [])
    given = app.switcher.open_model
    assert given is not None

    def open_model(path: Path) -> SessionBackend:
        idle_at_open.append(app.runner.idle)
        return given(path)

    app.switcher.open_model = open_model
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        stopped = threading.Event()

        def job(backend: SessionBackend, cancel: threading.Event) -> Iterator[ColumnEvent]:
            cancel.wait(10)
            time.sleep(0.3)  # still on the model a while after the cancel
            stopped.set()
            yield from ()

        holder = Holder()
        app.runner.start(job, holder)  # type: ignore[arg-type]
        picker = await open_picker(pilot, app)
        picker.query_one(OptionList).highlighted = 1
        await pilot.press("enter")
        await wait_until(pilot, lambda: chat_of(app).ready and app.runner.loading is None)
        assert stopped.is_set() and idle_at_open == [True]
        assert holder.ended


async def test_the_palette_cannot_switch_behind_another_screen(tmp_path: Path) -> None:
    opened: list[Path] = []
    app = make_app(tmp_path, opened)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        await pilot.press("f8")  # the score screen
        await wait_until(pilot, lambda: len(app.screen_stack) == 2)
        app.chat_screen.action_pick_model()  # as "Open a model" in the command palette does
        await pilot.pause()
        assert not isinstance(app.screen, ModelPickerScreen)
        assert app._notifications and list(app._notifications)[-1].message == (
            "Close the other screen first: another model opens from the chat."
        )
        assert opened == []


async def test_a_model_that_cannot_be_freed_is_said(tmp_path: Path) -> None:
    app = make_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        app.runner.close_after_use = lambda backend, timeout=10.0: False  # type: ignore[method-assign]
        picker = await open_picker(pilot, app)
        picker.query_one(OptionList).highlighted = 1
        await pilot.press("enter")
        await wait_until(pilot, lambda: chat_of(app).ready and app.runner.loading is None)
        await pilot.pause()
        assert (
            "first could not be freed (a job still held it): it stays in memory until"
            " samplescope quits." in [n.message for n in app._notifications]
        )


async def test_a_compare_column_replaces_a_reply_of_the_model_before(
    tmp_path: Path, store: ChatStore
) -> None:
    from tests.helpers import wait_done
    from tui.compare.screen import CompareScreen

    for name in ("first.gguf", "second.gguf"):
        (tmp_path / name).write_bytes(b"GGUF" + name.encode())
    app = make_app(tmp_path, [])
    app.store = store
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "hello")
        picker = await open_picker(pilot, app)
        picker.query_one(OptionList).highlighted = 1
        await pilot.press("enter")
        await wait_until(pilot, lambda: chat_of(app).ready and app.runner.loading is None)
        await pilot.press("ctrl+d")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_done(pilot, screen)
        promoted = screen.column_views[1]
        await pilot.press("2", "p")
        await wait_until(pilot, lambda: not isinstance(app.screen, CompareScreen))
        [reply] = chat_of(app).conversation.replies
        assert reply.model == str(tmp_path / "second.gguf") and reply.parent is None
        assert [t.step.token_id for t in reply.tokens] == list(promoted.token_ids)
        assert [m.role for m in chat_of(app).conversation.messages] == ["user", "assistant"]
        assert (
            chat_of(app).conversation.recorder is not None
            and chat_of(app).conversation.recorder.error is None
        )
        [saved] = [c for c in store.list_chats() if c.model_path.endswith("second.gguf")]
        stored = store.load_chat(saved.id)
        assert [m.role for m in stored.messages] == ["user", "assistant"]
        assert stored.replies[-1].token_ids == promoted.token_ids
