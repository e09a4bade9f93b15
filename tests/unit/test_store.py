"""The chat store: records round-trip, interrupted replies, search, migration, errors."""

from __future__ import annotations

import argparse
import hashlib
import os
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

import backend.store.store as store_module
from backend.chat.events import GenerationStats
from backend.config.paths import DATA_DIR_ENV, default_store_path
from backend.store.records import file_sha256
from backend.store.schema import SCHEMA_VERSION
from backend.store.store import ChatStore, ModelRef, StoreError, suggest_title
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings
from sampling.settings.spec import MAX_SEED
from tests.helpers import DateClock
from tui.cli.store_access import open_store

MODEL = ModelRef(path="/models/m.gguf", size=1234, sha256="ab" * 32)
BASE = SamplerSettings(temperature=0.7, top_k=40, seed=7)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "chats.sqlite3"


@pytest.fixture
def store(db_path: Path) -> ChatStore:
    with ChatStore(db_path, clock=DateClock()) as opened:
        yield opened


def test_new_database_is_current_version_in_wal_mode(store: ChatStore, db_path: Path) -> None:
    assert store.schema_version == SCHEMA_VERSION == 11
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_reply_round_trip_with_settings_changes(store: ChatStore) -> None:
    chat = store.new_chat("Sky", MODEL)
    store.add_message(chat, "system", "Be brief.")
    user = store.add_message(chat, "user", "Why is the sky blue?")
    writer = store.begin_reply(chat, MODEL, BASE, max_tokens=9)
    hot = BASE.with_changes(temperature=1.5)
    plan = [(11, BASE, "It"), (12, BASE, " is"), (13, hot, ""), (14, hot, " blue"), (15, BASE, ".")]
    for index, (token, settings, text) in enumerate(plan):
        writer.append_token(index, token, settings, text)
    stats = GenerationStats(prompt_tokens=20, decode_tokens=5, decode_tps=100.0)
    writer.finish("eos", stats, "It is blue.")

    chat_record = store.load_chat(chat)
    assert [m.role for m in chat_record.messages] == ["system", "user", "assistant"]
    assert chat_record.messages[1].id == user
    assert chat_record.model == MODEL
    (reply,) = chat_record.replies
    assert reply.number == 1
    assert reply.token_ids == (11, 12, 13, 14, 15)
    assert [(c.from_index, c.settings) for c in reply.settings_changes] == [
        (0, BASE),
        (2, hot),
        (4, BASE),
    ]
    assert reply.settings_at(0) == BASE
    assert reply.settings_at(3) == hot
    assert reply.settings_at(4) == BASE
    assert reply.finish_reason == "eos" and not reply.interrupted
    assert reply.stats == stats
    assert reply.text == chat_record.messages[2].content == "It is blue."
    assert reply.seed == 7 and reply.rng == "pcg64" and reply.max_tokens == 9
    assert reply.model == MODEL
    assert chat_record.conversation_before(reply)[-1].content == "Why is the sky blue?"
    assert len(chat_record.conversation()) == 3


def test_settings_changed_during_the_prefill_apply_from_the_first_token(
    store: ChatStore,
) -> None:
    chat = store.new_chat("Sky", MODEL)
    store.add_message(chat, "user", "Why is the sky blue?")
    writer = store.begin_reply(chat, MODEL, BASE, max_tokens=9)
    moved = BASE.with_changes(temperature=0.3)  # a slider moved before token 0
    writer.append_token(0, 11, moved, "It")
    writer.append_token(1, 12, moved, ".")
    writer.finish("eos", GenerationStats(), "It.")
    (reply,) = store.load_chat(chat).replies
    assert [(c.from_index, c.settings) for c in reply.settings_changes] == [(0, moved)]
    assert reply.token_ids == (11, 12)


def test_a_batch_stores_its_steps_and_settings_changes_as_token_by_token_writes_do(
    store: ChatStore,
) -> None:
    """One batch (committed at the finish) holds the steps, a change before token 0
    and one later; they read back as when each token is committed on its own."""
    sampler = Sampler(BASE, vocab_size=16)
    logits = np.linspace(0.0, 3.0, 16, dtype=np.float32)
    moved, later = BASE.with_changes(temperature=0.3), BASE.with_changes(top_k=5)
    in_force = [moved, moved, later, later]
    steps = []
    for settings in in_force:
        sampler.settings = settings
        steps.append(sampler.sample(logits, [1, 2]))
    stored = []
    for commit_every in (3600.0, 0.0):
        chat = store.new_chat("batch", MODEL)
        store.add_message(chat, "user", "count")
        writer = store.begin_reply(chat, MODEL, BASE, commit_every=commit_every)
        for index, (settings, step) in enumerate(zip(in_force, steps, strict=True)):
            writer.append_token(index, step.token_id, settings, f"t{index}", step)
        writer.finish("max_tokens", GenerationStats(), "t0t1t2t3")
        record = store.load_chat(chat)
        (reply,) = record.replies
        assert [(c.from_index, c.settings) for c in reply.settings_changes] == [
            (0, moved),
            (2, later),
        ]
        loaded = store.load_steps(record, reply)
        assert [loaded[i].token_id for i in range(4)] == [s.token_id for s in steps]
        assert [loaded[i].settings for i in range(4)] == in_force
        stored.append((reply.token_ids, [loaded[i].candidates for i in range(4)]))
    assert stored[0][0] == stored[1][0] and repr(stored[0][1]) == repr(stored[1][1])


def test_largest_seed_survives(store: ChatStore) -> None:
    chat = store.new_chat("seed")
    settings = SamplerSettings(seed=MAX_SEED, rng="xorshift128")
    writer = store.begin_reply(chat, MODEL, settings)
    writer.append_token(0, 5, settings, "x")
    writer.finish("max_tokens", None, "x")
    reply = store.load_chat(chat).replies[0]
    assert reply.seed == MAX_SEED and reply.rng == "xorshift128"
    assert reply.settings_at(0) == settings


def test_unfinished_reply_loads_as_interrupted_with_text_so_far(db_path: Path) -> None:
    first = ChatStore(db_path)
    chat = first.new_chat("partial", MODEL)
    first.add_message(chat, "user", "count")
    writer = first.begin_reply(chat, MODEL, BASE)
    for index, (token, text) in enumerate([(1, "one"), (2, ","), (3, " two")]):
        writer.append_token(index, token, BASE, text)
    # No finish, no close: another connection sees every committed token.
    second = ChatStore(db_path)
    reply = second.load_chat(chat).replies[0]
    assert reply.interrupted and reply.finish_reason == "interrupted"
    assert reply.token_ids == (1, 2, 3)
    assert reply.text == "one, two"
    assert reply.finished is None and reply.stats is None
    first.close()
    second.close()


def test_a_batched_writer_commits_its_tokens_together_and_at_the_finish(
    db_path: Path,
) -> None:
    first = ChatStore(db_path)
    chat = first.new_chat("batched", MODEL)
    first.add_message(chat, "user", "count")
    writer = first.begin_reply(chat, MODEL, BASE, commit_every=3600.0)
    second = ChatStore(db_path)
    writer.append_token(0, 1, BASE, "one")
    writer.append_token(1, 2, BASE, ",")
    assert writer.token_count == 2
    assert second.load_chat(chat).replies[0].token_ids == ()  # not committed yet
    writer.commit()
    assert second.load_chat(chat).replies[0].token_ids == (1, 2)
    writer.append_token(2, 3, BASE, " two")
    writer.finish("max_tokens", None, "one, two")
    reply = second.load_chat(chat).replies[0]
    assert reply.token_ids == (1, 2, 3) and reply.text == "one, two"
    first.close()
    second.close()


def test_finish_stores_tokens_not_appended_and_rejects_reuse(store: ChatStore) -> None:
    chat = store.new_chat("t")
    writer = store.begin_reply(chat, MODEL, BASE)
    writer.append_token(0, 9, BASE, "a")
    with pytest.raises(StoreError, match="out of order"):
        writer.append_token(2, 9, BASE)
    writer.finish("cancelled", None, "abc", token_ids=(9, 8, 7))
    assert store.load_chat(chat).replies[0].token_ids == (9, 8, 7)
    assert writer.token_count == 3
    with pytest.raises(StoreError, match="already finished"):
        writer.append_token(3, 1, BASE)


def test_list_search_rename_delete(store: ChatStore) -> None:
    a = store.new_chat("Apples", MODEL)
    store.add_message(a, "user", "tell me about 100% juice")
    b = store.new_chat("Bananas")
    store.add_message(b, "user", "yellow_fruit")
    writer = store.begin_reply(b, MODEL, BASE)
    writer.append_token(0, 1, BASE, "ok")
    writer.finish("eos", None, "ok")

    chats = store.list_chats()
    assert [c.id for c in chats] == [b, a]  # most recently updated first
    assert chats[0].reply_count == 1 and chats[0].message_count == 2
    assert chats[1].model_name == "m.gguf" and chats[0].model_name == ""
    assert [c.id for c in store.list_chats("APPLE")] == [a]
    assert [c.id for c in store.list_chats("100%")] == [a]  # % is literal
    assert store.list_chats("100x") == []
    assert [c.id for c in store.list_chats("w_f")] == [b]  # _ is literal
    assert store.list_chats("wxf") == []
    assert [c.id for c in store.list_chats("")] == [b, a]

    store.rename_chat(a, "Pears")
    assert store.load_chat(a).title == "Pears"
    store.delete_chat(b)
    assert [c.id for c in store.list_chats()] == [a]
    with pytest.raises(StoreError, match="no chat"):
        store.load_chat(b)
    with pytest.raises(StoreError, match="no chat"):
        store.delete_chat(b)
    with pytest.raises(StoreError, match="no chat"):
        store.add_message(b, "user", "x")
    for table in ("messages", "replies", "reply_tokens", "settings_changes"):
        count = store._conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        assert count == (1 if table == "messages" else 0), table


def test_delete_message_removes_the_reply_record(store: ChatStore) -> None:
    chat = store.new_chat("regenerate")
    store.add_message(chat, "user", "hi")
    writer = store.begin_reply(chat, MODEL, BASE)
    writer.append_token(0, 3, BASE, "yo")
    writer.finish("eos", None, "yo")
    store.delete_message(writer.message_id)  # what a regenerate replaces
    again = store.begin_reply(chat, MODEL, BASE.with_changes(seed=8))
    again.finish("eos", None, "hey")
    record = store.load_chat(chat)
    assert [m.content for m in record.messages] == ["hi", "hey"]
    assert [r.number for r in record.replies] == [1] and record.replies[0].seed == 8
    assert store._conn.execute("SELECT count(*) FROM reply_tokens").fetchone()[0] == 0
    with pytest.raises(StoreError, match="no message"):
        store.delete_message(writer.message_id)


def test_dates_come_from_the_clock(store: ChatStore) -> None:
    chat = store.new_chat("dated")
    record = store.load_chat(chat)
    assert record.created == datetime(2026, 1, 2, 3, 5, 5, tzinfo=UTC)
    store.add_message(chat, "user", "hi")
    assert store.load_chat(chat).updated == datetime(2026, 1, 2, 3, 6, 5, tzinfo=UTC)


def test_model_ref_hashes_once_and_rehashes_when_the_file_changes(
    tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + bytes(range(256)) * 10)
    calls: list[Path] = []

    def counting(path: Path) -> str:
        calls.append(path)
        return file_sha256(path)

    monkeypatch.setattr(store_module, "file_sha256", counting)
    with ChatStore(db_path) as store:
        ref = store.model_ref(model)
        assert ref.sha256 == hashlib.sha256(model.read_bytes()).hexdigest()
        assert ref.size == model.stat().st_size and ref.path == str(model.resolve())
        assert store.model_ref(model) == ref
    with ChatStore(db_path) as store:  # the cache lives in the database
        assert store.model_ref(model) == ref
        assert len(calls) == 1
        model.write_bytes(b"GGUF changed")
        os.utime(model, ns=(1, 1))
        changed = store.model_ref(model)
        assert changed.sha256 == hashlib.sha256(b"GGUF changed").hexdigest()
        assert len(calls) == 2
        with pytest.raises(StoreError, match="cannot read model file"):
            store.model_ref(tmp_path / "missing.gguf")


def test_default_path_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    assert default_store_path() == tmp_path / "data" / "chats.sqlite3"
    with open_store(argparse.Namespace(db=None)) as store:
        assert store.path == tmp_path / "data" / "chats.sqlite3"
    assert (tmp_path / "data" / "chats.sqlite3").exists()


@pytest.mark.parametrize("chat_id", [2**63, -(2**63) - 1, 10**30])
def test_an_id_beyond_sqlites_integers_is_a_store_error(store: ChatStore, chat_id: int) -> None:
    with pytest.raises(StoreError, match="ids are below 2\\*\\*63"):
        store.load_chat(chat_id)
    with pytest.raises(StoreError):
        store.delete_chat(chat_id)


def test_corrupt_file_is_a_clear_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "chats.sqlite3"
    bad.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="corrupt or not a samplescope database") as info:
        ChatStore(bad)
    assert str(bad) in str(info.value)


def test_garbage_in_the_middle_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path) as store:
        for number in range(30):
            store.add_message(store.new_chat(f"chat {number}"), "user", "words " * 400)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2 // 4096 * 4096
    data[middle : middle + 4096] = b"garbage!" * 512
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=r"is corrupt \(.*Page") as info:
        ChatStore(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    assert path.read_bytes() == bytes(data)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chats.sqlite3"]


def test_newer_schema_is_refused(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(StoreError, match="newer than this samplescope") as info:
        ChatStore(db_path)
    assert str(db_path) in str(info.value)


def test_locked_database_is_a_clear_error(store: ChatStore, db_path: Path) -> None:
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        quick = ChatStore(db_path, timeout=0.05)
        with pytest.raises(StoreError, match="locked") as info:
            quick.new_chat("blocked")
        assert str(db_path) in str(info.value)
        quick.close()
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_writer_works_from_another_thread(store: ChatStore) -> None:
    chat = store.new_chat("threads")
    writer = store.begin_reply(chat, MODEL, BASE)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for index in range(20):
                writer.append_token(index, index, BASE, "x")
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    while thread.is_alive():
        store.list_chats()  # reads interleave with the writes
    thread.join()
    assert errors == []
    assert store.load_chat(chat).replies[0].text == "x" * 20


def test_suggest_title() -> None:
    assert suggest_title("  hello\n  world ") == "hello world"
    assert suggest_title("") == "Untitled chat"
    long = suggest_title("word " * 40)
    assert len(long) == 60 and long.endswith("…")
