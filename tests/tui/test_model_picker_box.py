"""The model picker's box: typing filters the list, a typed path (Tab completes it)
opens a file not listed, a file holding a tokenizer alone is marked and refused; and
the status line names the model by its file. On the fake backend."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList

from backend.config.model_catalog import LocalModel
from tests.helpers import chat_of, press_at_once, wait_until
from tests.tui.test_model_picker import SIZE, NamedFake, listed, make_app, open_picker
from tests.unit.test_model_catalog import tiny_gguf, vocab_gguf
from tui.app import SamplescopeApp

pytestmark = pytest.mark.anyio


async def test_typing_filters_the_list_and_enter_opens_the_one_left(tmp_path: Path) -> None:
    opened: list[Path] = []
    app = make_app(tmp_path, opened)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        picker = await open_picker(pilot, app)
        options = picker.query_one(OptionList)
        await press_at_once(pilot, *"llama3")
        await pilot.pause()
        shown = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert len(shown) == 2 and shown[0].startswith("llama3.2:1b")
        assert "Open a file" in shown[1]
        await pilot.press("enter")
        await wait_until(pilot, lambda: chat_of(app).ready and app.runner.loading is None)
        assert opened == [tmp_path / "second.gguf"]


async def test_a_typed_path_completes_with_tab_and_opens_a_file_not_listed(
    tmp_path: Path,
) -> None:
    opened: list[Path] = []
    folder = tmp_path / "elsewhere"
    model = tiny_gguf(folder / "my-model.gguf", file_type=7, context=512, template=False)
    vocab_gguf(folder / "ggml-vocab-only.gguf")
    app = make_app(tmp_path, opened)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        picker = await open_picker(pilot, app)
        box = picker.query_one(Input)
        assert app.focused is box
        box.value = str(folder / "my")
        await pilot.press("tab")
        assert box.value == str(model)
        assert app.focused is box
        box.value = str(folder / "gg")
        await pilot.press("tab", "enter")
        note = str(picker.query_one("#model-picker-note").render())
        assert "holds a vocabulary alone (no weights): not a model" in note
        box.value = str(folder / "missing.gguf")
        await pilot.press("enter")
        assert "No file at" in str(picker.query_one("#model-picker-note").render())
        box.value = str(model)
        await pilot.press("enter")
        await wait_until(pilot, lambda: chat_of(app).ready and app.runner.loading is None)
        assert opened == [model]


async def test_open_a_file_puts_the_box_in_path_mode(tmp_path: Path) -> None:
    app = make_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        picker = await open_picker(pilot, app)
        options = picker.query_one(OptionList)
        options.highlighted = options.option_count - 1
        await pilot.press("enter")
        box = picker.query_one(Input)
        assert box.value == "~/" and app.focused is box
        assert options.option_count == 1
        assert str(options.get_option_at_index(0).prompt) == "Open ~/"


async def test_a_vocabulary_only_file_is_marked_and_cannot_be_picked(tmp_path: Path) -> None:
    vocab = LocalModel("ggml-vocab-llama-spm.gguf", tmp_path / "v.gguf", "model_dirs", 600_000,
                       architecture="llama", vocab_only=True)  # fmt: skip
    app = SamplescopeApp(
        NamedFake(tmp_path / "first.gguf"),
        cursor_blink=False,
        list_models=lambda: [*listed(tmp_path), vocab],
        open_model=NamedFake,
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        picker = await open_picker(pilot, app)
        options = picker.query_one(OptionList)
        assert "vocabulary only (no weights)" in str(options.get_option_at_index(4).prompt)
        assert options.get_option_at_index(4).disabled


async def test_the_status_line_names_the_models_file(tmp_path: Path) -> None:
    fake = NamedFake(tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf")
    fake._info = dataclasses.replace(fake.info, name="Smollm2 135M 8k Lc100K Mix1 Ep2")
    blob = NamedFake(tmp_path / "sha256-0123abcd")  # an Ollama blob: its GGUF name then
    blob._info = dataclasses.replace(blob.info, name="Llama 3.2 1B Instruct")
    for backend, shown in ((fake, "SmolLM2-135M-Instruct.Q4_1"), (blob, "Llama 3.2 1B Instruct")):
        app = SamplescopeApp(backend, cursor_blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: chat_of(app).ready)  # noqa: B023
            assert chat_of(app).status.model == shown
