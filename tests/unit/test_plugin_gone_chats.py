"""Chats made with a sampler plug-in that is no longer loaded stay readable: `export`
and `tree` work, the plug-in's values are shown as unknown, and running such a reply
again is refused in one line naming the plug-in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.chat.events import GenerationStats
from backend.store.lookup import settings_for
from backend.store.records import StoreError
from backend.store.store import ChatStore, ModelRef
from sampling.settings.record import SamplerSettings
from tests.helpers import readme_plugin
from tests.registries import with_plugin
from tui.cli.main import main

MODEL = ModelRef(path="/models/tiny.gguf", size=99, sha256="cd" * 32)


@pytest.fixture
def gone_plugin_chats(tmp_path: Path) -> Iterator[tuple[Path, int, int]]:
    """A store with two chats saved while the plug-in of docs/plugins.md was loaded
    (one ran it in the order, one only set its setting), then the plug-in unloaded."""
    path = tmp_path / "top_h.py"
    path.write_text(readme_plugin(), encoding="utf-8")
    joined = with_plugin(path)
    base = SamplerSettings.from_dict({"top_h": 0.5}, joined)
    ran = base.with_changes(samplers=(*base.samplers, "top_h"))
    db = tmp_path / "chats.sqlite3"
    with ChatStore(db, registry=joined) as store:
        chats = []
        for settings in (ran, base):
            chat = store.new_chat("with top-h", MODEL)
            store.add_message(chat, "user", "hi")
            writer = store.begin_reply(chat, MODEL, settings, max_tokens=4)
            writer.append_token(0, 5, settings, "Hello")
            writer.finish("max_tokens", GenerationStats(decode_tokens=1), "Hello")
            chats.append(chat)
    yield db, chats[0], chats[1]


def test_export_and_tree_read_a_chat_whose_plugin_is_gone(
    gone_plugin_chats: tuple[Path, int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    db, ran, only_set = gone_plugin_chats
    for chat in (ran, only_set):
        assert main(["export", str(chat), "--format", "json", "--db", str(db)]) == 0
        exported = json.loads(capsys.readouterr().out)
        [reply] = [m["reply"] for m in exported["messages"] if m["reply"]]
        [change] = reply["settings_changes"]
        assert change["unknown"]["top_h"] == 0.5
        assert "top_h" not in change["settings"]
        assert (
            "top_h" in reply["cannot_run_again"] and "--sampler-file" in reply["cannot_run_again"]
        )
        assert reply["text"] == "Hello"
        assert main(["export", str(chat), "--format", "md", "--db", str(db)]) == 0
        markdown = capsys.readouterr().out
        assert "> unknown (a sampler plug-in that is not loaded): " in markdown
        assert "top_h=0.5" in markdown and "Hello" in markdown
        assert main(["tree", str(chat), "--db", str(db)]) == 0
        assert f"chat {chat} 'with top-h'\n* reply 1 branch" in capsys.readouterr().out
    assert main(["export", str(ran), "--format", "json", "--db", str(db)]) == 0
    [change] = [
        m["reply"]["settings_changes"][0]
        for m in json.loads(capsys.readouterr().out)["messages"]
        if m["reply"]
    ]
    assert change["unknown"]["samplers"][-1] == "top_h"
    assert "top_h" not in change["settings"]["samplers"]


def test_running_such_a_reply_again_is_refused_naming_the_plugin(
    gone_plugin_chats: tuple[Path, int, int],
) -> None:
    db, ran, only_set = gone_plugin_chats
    with ChatStore(db) as store:
        for chat_id in (ran, only_set):
            chat = store.load_chat(chat_id)
            reply = chat.messages[-1].reply
            assert reply is not None
            with pytest.raises(StoreError, match=r"reply 1 cannot run again: it .*top_h") as error:
                settings_for(chat, reply, 0)
            assert "\n" not in str(error.value)
