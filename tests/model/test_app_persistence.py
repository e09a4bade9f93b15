"""The app saves its chats: recorded as they happen, reopened from the history screen
and continued; the config file applied at startup (a broken one reported)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.session.llama_backend import LlamaBackend
from backend.store.store import ChatStore
from tests.helpers import send_message
from tui.app import SamplescopeApp

pytestmark = pytest.mark.anyio

SIZE = (120, 36)


async def test_a_real_reply_is_stored_with_its_token_ids(
    llama_backend: LlamaBackend, default_model_path: Path, store: ChatStore
) -> None:
    llama_backend.reset()
    app = SamplescopeApp(llama_backend, max_tokens=16, cursor_blink=False, store=store)
    async with app.run_test(size=SIZE) as pilot:
        finished = await send_message(pilot, app, "Name three colours.")
    assert finished.reason in ("eos", "max_tokens") and finished.token_ids
    [chat] = store.list_chats()
    record = store.load_chat(chat.id)
    [reply] = record.replies
    assert reply.token_ids == finished.token_ids
    assert reply.text == finished.text == record.messages[-1].content
    assert reply.finish_reason == finished.reason
    assert Path(reply.model.path) == default_model_path.resolve()
    assert reply.n_ctx == llama_backend.info.n_ctx


async def test_completion_mode_in_the_app_continues_the_text_and_is_saved(
    llama_backend: LlamaBackend, store: ChatStore
) -> None:
    from backend.chat.protocol import ChatMessage, LiveSettings
    from sampling.settings.record import SamplerSettings

    greedy = SamplerSettings(temperature=0.0)
    llama_backend.reset()
    app = SamplescopeApp(
        llama_backend,
        max_tokens=10,
        cursor_blink=False,
        store=store,
        settings=greedy,
        mode="completion",
    )
    async with app.run_test(size=SIZE) as pilot:
        finished = await send_message(pilot, app, "The owl is a bird that")
    llama_backend.reset()
    events = list(
        llama_backend.generate(
            [ChatMessage("user", "The owl is a bird that")],
            LiveSettings(greedy),
            max_tokens=10,
            raw=True,
        )
    )
    assert finished.token_ids == events[-1].token_ids  # type: ignore[union-attr]
    [chat] = store.list_chats()
    [reply] = store.load_chat(chat.id).replies
    assert reply.mode == "completion" and reply.token_ids == finished.token_ids
