"""A chat saved while a sampler plug-in was loaded opens in the app once the plug-in is
gone: its turns and reply come back, the records being there."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from backend.store.store import ChatStore
from sampling.built_in import DEFAULT_CHAT_SETTINGS, chat_defaults
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, readme_plugin, reopen_chat, send_message
from tests.registries import with_plugin
from tui.app import SamplescopeApp

pytestmark = pytest.mark.anyio

SIZE = (120, 36)


def _fake(model: Path) -> FakeBackend:
    fake = FakeBackend()
    fake._info = replace(fake.info, path=str(model))
    return fake


async def test_a_chat_whose_plugin_is_gone_opens_in_the_app(
    tmp_path: Path, store: ChatStore
) -> None:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF not really a model")
    plugin = tmp_path / "top_h.py"
    plugin.write_text(readme_plugin(), encoding="utf-8")
    settings = chat_defaults(with_plugin(plugin)).with_changes(
        samplers=(*DEFAULT_CHAT_SETTINGS.samplers, "top_h"), top_h=0.5
    )
    app = SamplescopeApp(
        _fake(model), settings=settings, max_tokens=4, cursor_blink=False, store=store
    )
    async with app.run_test(size=SIZE) as pilot:
        made = await send_message(pilot, app, "hello there")
    assert made.text
    # The store reads with the built-in units alone: the plug-in is gone.
    app = SamplescopeApp(_fake(model), max_tokens=4, cursor_blink=False, store=store)
    async with app.run_test(size=SIZE) as pilot:
        await reopen_chat(pilot, app)
        await pilot.pause()
        assert [(m.role, m.content) for m in chat_of(app).conversation.messages] == [
            ("user", "hello there"),
            ("assistant", made.text),
        ]
        [reply] = chat_of(app).conversation.replies
        assert reply.text == made.text
        assert "top_h" not in app.registry.origins
