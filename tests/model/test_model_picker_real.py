"""The model picker on llama.cpp: the default model answers, another GGUF (a tiny llama)
opens without restarting and answers the next message, and the first is freed."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.config.model_catalog import describe
from backend.session.backend import SessionBackend
from backend.session.llama_backend import LlamaBackend
from tests.helpers import chat_of, send_message, wait_until
from tests.tiny_models import spm_vocab, write_tiny_llama
from tui.app import SamplescopeApp
from tui.models.picker import ModelPickerScreen

pytestmark = pytest.mark.anyio


def load(path: Path) -> SessionBackend:
    return LlamaBackend.load(path, n_ctx=512, n_batch=64, n_threads=1)


async def test_another_gguf_opens_and_answers_the_next_message(
    tmp_path: Path, default_model_path: Path
) -> None:
    tiny = write_tiny_llama(tmp_path / "tiny-F32.gguf", spm_vocab(1000))
    app = SamplescopeApp(
        backend_factory=lambda: load(default_model_path),
        max_tokens=6,
        cursor_blink=False,
        list_models=lambda: [describe("tiny-F32.gguf", tiny, "model_dirs")],
        open_model=load,
    )
    async with app.run_test(size=(120, 36)) as pilot:
        first = await send_message(pilot, app, "Hi")
        assert first.token_ids
        smollm = app.runner.backend
        assert isinstance(smollm, LlamaBackend)
        await pilot.press("f7")
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPickerScreen))
        picker = app.screen
        assert isinstance(picker, ModelPickerScreen)
        await wait_until(pilot, lambda: picker.models != [])
        await pilot.press("enter")
        await wait_until(pilot, lambda: chat_of(app).ready and app.runner.loading is None, 120)
        now = app.runner.backend
        assert isinstance(now, LlamaBackend)
        assert now.info.path == str(tiny)
        assert smollm.runtime._model is None  # freed
        assert app.conversation.mode == "completion"  # no chat template, no turn tokens
        second = await send_message(pilot, app, "hello")
        assert len(second.token_ids) == 6
        assert now.info.n_vocab == 1000
        assert chat_of(app).conversation.messages[0].content == "Hi"
