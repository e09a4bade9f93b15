"""Storing a token costs the same however long the reply is; the text is built from its
tokens until the reply finishes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backend.store.records import StoreError
from backend.store.store import ChatStore, Fork, ModelRef
from sampling.settings.record import SamplerSettings

MODEL = ModelRef(path="/models/m.gguf", size=1234, sha256="ab" * 32)
BASE = SamplerSettings(temperature=0.7, top_k=40, seed=7)
PIECE = " a word of text"  # 15 characters: 3,000 tokens make 45 kB of text
LONG = 3000
WINDOW = 200


def wal_frames(path: Path, page_size: int) -> int:
    """Pages written to the write-ahead log so far (it is never checkpointed here)."""
    size = os.path.getsize(path.with_name(path.name + "-wal"))
    return (size - 32) // (page_size + 24)


def test_appending_a_token_writes_as_much_late_in_a_long_reply_as_early(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path) as store:
        conn = store._conn
        conn.execute("PRAGMA wal_autocheckpoint = 0")  # the log keeps every page written
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        chat = store.new_chat("long", MODEL)
        store.add_message(chat, "user", "go on")
        writer = store.begin_reply(chat, MODEL, BASE)
        written: list[int] = []
        statements: list[list[str]] = []
        for index in range(LONG):
            before = wal_frames(path, page_size)
            executed: list[str] = []
            conn.set_trace_callback(executed.append)
            writer.append_token(index, 7, BASE, PIECE)
            conn.set_trace_callback(None)
            written.append(wal_frames(path, page_size) - before)
            statements.append(executed)
        early = sum(written[WINDOW : 2 * WINDOW]) / WINDOW
        late = sum(written[-WINDOW:]) / WINDOW
        # A rewrite of the text per token would add a page per 4 kB of text by now.
        assert late <= early + 0.25, (early, late)
        # The same statements, one INSERT of the token's row, at any length.
        assert len({len(s) for s in statements[1:]}) == 1
        assert all("UPDATE" not in line for line in statements[-1])
        writer.finish("max_tokens", None, PIECE * LONG)
        assert store.load_chat(chat).messages[-1].content == PIECE * LONG


def test_an_unfinished_reply_reads_back_whole_from_its_pieces(tmp_path: Path) -> None:
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        chat = store.new_chat("c", MODEL)
        store.add_message(chat, "user", "count")
        writer = store.begin_reply(chat, MODEL, BASE)
        for index, piece in enumerate(["one", ",", "", " two"]):
            writer.append_token(index, index + 1, BASE, piece)
        turn = store.load_chat(chat).messages[-1]
        assert turn.reply is not None and turn.reply.text == "one, two"
        assert turn.content == "one, two"  # what continuing the chat would send
        assert [c.id for c in store.list_chats("e, tw")] == [chat]  # across pieces
        # A branch followed from token 2 on: its text starts with the shared text.
        first = turn.reply
        branch = store.begin_reply(chat, MODEL, BASE, fork=Fork(first, 2, "one,"))
        branch.append_token(2, 9, BASE, " three")
        again = store.load_chat(chat)
        assert again.messages[-1].content == "one, three"
        assert [b.text for b in again.messages[-1].branches] == ["one, two", "one, three"]
        # Going back to the first branch while both are unfinished shows its text.
        store.follow_branch(chat, first.id)
        assert store.load_chat(chat).messages[-1].content == "one, two"
        # Finishing the branch the turn does not follow leaves the turn's text alone.
        branch.finish("eos", None, "one, three!")
        assert store.load_chat(chat).messages[-1].content == "one, two"
        writer.finish("eos", None, "one, two.")
        final = store.load_chat(chat).messages[-1]
        assert final.content == "one, two." and final.reply is not None
        assert [b.text for b in final.branches] == ["one, two.", "one, three!"]
        store.follow_branch(chat, final.branches[1].id)
        assert store.load_chat(chat).messages[-1].content == "one, three!"


def test_revise_takes_back_tokens_and_their_settings_changes(tmp_path: Path) -> None:
    hotter = BASE.with_changes(temperature=1.5)
    colder = BASE.with_changes(temperature=0.2)
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        chat = store.new_chat("c", MODEL)
        store.add_message(chat, "user", "count")
        writer = store.begin_reply(chat, MODEL, BASE)
        for index, settings in enumerate([hotter, hotter, colder, colder]):
            writer.append_token(index, 10 + index, settings, f" {index}")
        writer.revise(4)  # nothing to take back
        writer.revise(2)
        reply = store.load_chat(chat).messages[-1].reply
        assert reply is not None
        assert reply.token_ids == (10, 11)
        assert [c.from_index for c in reply.settings_changes] == [0]
        assert reply.settings_at(1) == hotter
        # Back to the start: the start's row holds the settings the reply began with.
        writer.revise(0)
        reply = store.load_chat(chat).messages[-1].reply
        assert reply is not None
        assert reply.token_ids == ()
        assert [(c.from_index, c.settings) for c in reply.settings_changes] == [(0, BASE)]
        writer.append_token(0, 20, colder, " again")
        with pytest.raises(StoreError, match="cannot go back to token 2"):
            writer.revise(2)
        writer.finish("stop", None, " again")
        with pytest.raises(StoreError, match="already finished"):
            writer.revise(0)
        reply = store.load_chat(chat).messages[-1].reply
        assert reply is not None
        assert reply.token_ids == (20,)
        assert reply.settings_at(0) == colder
