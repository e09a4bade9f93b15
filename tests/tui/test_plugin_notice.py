"""A sampler plugin switched off mid-reply is told in the app: its notice shows in the
transcript, and the reply goes on without it."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from sampling.built_in import DEFAULT_CHAT_SETTINGS, chat_defaults
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, nth_reply_finished, type_message, write_plugin
from tests.registries import with_plugin
from tui.app import SamplescopeApp

pytestmark = pytest.mark.anyio


async def test_a_plugin_switched_off_is_a_notice_in_the_transcript(tmp_path: Path) -> None:
    joined = with_plugin(write_plugin(tmp_path, "rogue", "        raise RuntimeError('no luck')"))
    settings = chat_defaults(joined).with_changes(
        samplers=("penalties", "dry", "rogue", *DEFAULT_CHAT_SETTINGS.samplers[2:])
    )
    app = SamplescopeApp(FakeBackend(), settings=settings, max_tokens=5, cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await type_message(pilot, app, "hello")
        await nth_reply_finished(pilot, app)
        notes = [str(note.render()) for note in app.query(".note").results(Static)]
        expected = "sampler plugin rogue switched off for this reply: RuntimeError: no luck"
        assert expected in notes
        assert chat_of(app).conversation.replies[0].text
