"""Chats saved by every earlier schema version replay token-identical once migrated.

`tests/fixtures/store/vN.sql` are SQL dumps of databases written by samplescope at
schema version N (how each was made is in `tests/fixtures/store/README.md`): two
turns on SmolLM2-135M, each reply with settings changed mid-reply, the first with
the default order of its time (the temperature before the filters), the second with
`temperature_last` and, where the version had one, an order of its own.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from backend.chat.events import Decoding
from backend.session.llama_backend import LlamaBackend
from backend.session.replay import replay
from backend.store.schema import SCHEMA_VERSION
from backend.store.store import ChatStore
from tui.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "store"
VERSIONS = (1, 2, 3, 4)


def load_fixture(version: int, path: Path) -> None:
    """Write the version-`version` dump into a new database file at `path`."""
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / f"v{version}.sql").read_text(encoding="utf-8"))
    conn.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_a_saved_chat_replays_token_identical_after_migration(
    version: int, tmp_path: Path, default_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chats.sqlite3"
    load_fixture(version, path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == version
    conn.close()
    with ChatStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        (summary,) = store.list_chats()
        chat = store.load_chat(summary.id)
    first, second = chat.replies
    # Each reply changed its settings mid-reply; each stored order is the one it ran.
    assert len(first.settings_changes) == 2 and len(second.settings_changes) >= 1
    assert first.settings_at(0).order[:3] == ("penalties", "dry", "temperature")
    assert second.settings_at(0).order[-1] == "temperature"
    for number in (1, 2):
        args = ["replay", str(chat.id), "--reply", str(number), "--db", str(path)]
        args += ["--model", str(default_model_path), "--threads", "1"]
        assert main(args) == 0, capsys.readouterr()
        assert "token-identical" in capsys.readouterr().out


def test_lockstep_replies_stored_before_kv_streams_replay_token_identical(
    tmp_path: Path,
    default_model_path: Path,
    llama_backend: LlamaBackend,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Four compare columns decoded in one unified KV stream, stored with the decoding
    record of that time (no `kv`, no `repack`: `make_lockstep_fixture.py`), replay
    token-identical: the record says to rebuild them unified. Rebuilt in KV streams
    instead (today's lockstep, each column's tokens alone), some column differs."""
    path = tmp_path / "chats.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "lockstep_unified.sql").read_text(encoding="utf-8"))
    conn.close()
    with ChatStore(path) as store:
        chats = [store.load_chat(summary.id) for summary in store.list_chats()]
    assert len(chats) == 4
    moved = []
    for chat in chats:
        (reply,) = chat.replies
        assert reply.decoding is not None and '"kv"' not in reply.decoding
        old = Decoding.from_json(reply.decoding)
        assert (old.streams, old.repack) == (False, True)
        args = ["replay", str(chat.id), "--db", str(path), "--model", str(default_model_path)]
        assert main([*args, "--threads", "1"]) == 0
        assert "token-identical" in capsys.readouterr().out
        streams = replace(old, streams=True, repack=False).to_json()
        again = replay(llama_backend, chat, replace(reply, decoding=streams))
        moved.append(again.first_difference)
    print("first difference in KV streams, per column:", moved)
    assert any(at is not None for at in moved)
