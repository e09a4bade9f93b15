"""Fuzzing stored chat databases: random bytes, a real database with bytes changed, any
value written into any stored cell (bad JSON in a settings column, text for a number,
a blob for a step), foreign SQLite files and a schema from the future.

Opening gives a store or one `StoreError` line naming the file; reading every chat,
reply, step and piece gives records or our one error base, never `sqlite3`, JSON,
numpy or key errors. Examples per run come from the hypothesis profile
(tests/conftest.py): three properties of 100 examples each.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.chat.events import GenerationStats
from backend.store.store import ChatStore, ModelRef, StoreError
from sampling.errors import SamplescopeError
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MODEL = ModelRef(path="/models/m.gguf", size=1234, sha256="ab" * 32)
BASE = SamplerSettings(temperature=0.7, top_k=40, seed=7)


def build_database(path: Path) -> None:
    """A chat with a system prompt, a question, and a finished reply of four steps
    whose settings change twice, plus a branch and an unfinished reply."""
    with ChatStore(path) as store:
        sampler = Sampler(BASE, vocab_size=16)
        logits = np.linspace(0.0, 3.0, 16, dtype=np.float32)
        chat = store.new_chat("fuzz", MODEL)
        store.add_message(chat, "system", "Be brief.")
        store.add_message(chat, "user", "Count")
        writer = store.begin_reply(chat, MODEL, BASE, max_tokens=9)
        for index, chosen in enumerate([BASE, BASE.with_changes(top_k=5), BASE, BASE]):
            sampler.settings = chosen
            step = sampler.sample(logits, [1, 2])
            writer.append_token(index, step.token_id, chosen, f"t{index}", step)
        writer.finish("max_tokens", GenerationStats(prompt_tokens=3, decode_tokens=4), "t0t1t2t3")
        other = store.new_chat("second", None)
        store.add_message(other, "user", "Hi")
        unfinished = store.begin_reply(other, MODEL, BASE)
        unfinished.append_token(0, 3, BASE, "x")
        unfinished.commit()
    # One file, no journal beside it: copies of it are whole databases.
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()


@pytest.fixture(scope="module")
def pristine() -> Path:
    path = Path(tempfile.mkdtemp(prefix="samplescope-fuzz-store-")) / "pristine.sqlite3"
    build_database(path)
    return path


def read_everything(path: Path) -> None:
    """Open the database and read every chat, reply, step and piece; any failure must
    be our own error in one line."""
    try:
        with ChatStore(path, timeout=0.1) as store:
            for summary in store.list_chats():
                chat = store.load_chat(summary.id)
                for reply in chat.replies:
                    store.load_steps(chat, reply)
                    store.load_pieces(chat, reply)
            store.list_chats("t")
    except SamplescopeError as error:
        assert "\n" not in str(error), str(error)


def copy_of(pristine: Path) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="samplescope-fuzz-store-"))
    target = folder / "chats.sqlite3"
    shutil.copyfile(pristine, target)
    return target


@HEALTH
@given(st.lists(st.tuples(st.integers(0, 2**20), st.integers(0, 255)), min_size=1, max_size=8))
def test_a_database_with_bytes_changed_opens_and_reads_or_gives_one_line(
    pristine: Path, edits: list[tuple[int, int]]
) -> None:
    path = copy_of(pristine)
    try:
        data = bytearray(path.read_bytes())
        for position, byte in edits:
            data[position % len(data)] = byte
        path.write_bytes(bytes(data))
        read_everything(path)
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


CELLS = {
    "chats": ["title", "created", "updated", "model_path", "model_size", "model_sha256"],
    "messages": ["position", "role", "content", "created", "branch_id", "after_reply_id"],
    "replies": [
        "parent_id", "fork_at", "mode", "model_path", "model_size", "model_sha256", "seed",
        "rng", "max_tokens", "finish_reason", "error", "stats", "created", "finished",
        "n_ctx", "n_batch", "step_layout", "text", "decoding", "loop",
    ],
    "reply_steps": ["idx", "scalars", "arrays"],
    "reply_tokens": ["idx", "token_id", "piece"],
    "settings_changes": ["from_index", "settings"],
}  # fmt: skip
cell = st.sampled_from([(table, column) for table, columns in CELLS.items() for column in columns])
json_texts = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
).map(lambda value: __import__("json").dumps(value))
values = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=40),
    json_texts,
    st.sampled_from(
        ["{", "[]", "{}", "null", '{"temperature": "hot"}', '{"top_k": 1e999}', "[1, 2]",
         '{"temperature": 0.5, "plugin.x": 1}', "NaN", "\x00", "chat", "completion", "eos"]
    ),
)  # fmt: skip


@HEALTH
@given(st.lists(st.tuples(cell, values, st.booleans()), min_size=1, max_size=3))
def test_any_value_in_any_stored_cell_reads_or_gives_one_line(
    pristine: Path, writes: list[tuple[tuple[str, str], object, bool]]
) -> None:
    path = copy_of(pristine)
    try:
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA ignore_check_constraints = ON")
        for (table, column), value, every_row in writes:
            where = "" if every_row else f" WHERE rowid IN (SELECT rowid FROM {table} LIMIT 1)"
            if table in ("reply_steps", "reply_tokens", "settings_changes"):
                where = ""  # WITHOUT ROWID tables
            try:
                conn.execute(f'UPDATE {table} SET "{column}" = ?{where}', (value,))
            except sqlite3.IntegrityError:
                continue  # a NOT NULL column, a duplicate key: SQLite keeps it out
        conn.commit()
        conn.close()
        read_everything(path)
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


@HEALTH
@given(st.binary(max_size=2048), st.booleans())
def test_random_bytes_as_a_database_give_one_line(data: bytes, with_header: bool) -> None:
    folder = Path(tempfile.mkdtemp(prefix="samplescope-fuzz-store-"))
    try:
        path = folder / "chats.sqlite3"
        path.write_bytes((b"SQLite format 3\x00" if with_header else b"") + data)
        read_everything(path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize(
    "script",
    [
        "CREATE TABLE chats (id TEXT); INSERT INTO chats VALUES ('x');",
        "CREATE TABLE replies (x); CREATE TABLE messages (y); PRAGMA user_version = 0;",
        "CREATE TABLE t (x); PRAGMA user_version = 999;",
        "PRAGMA user_version = -5;",
        "PRAGMA user_version = 3;",
        "CREATE VIEW chats AS SELECT 1 AS id;",
        "CREATE TABLE t (x); PRAGMA user_version = 7;",
    ],
    ids=["foreign-chats", "foreign-tables", "future", "negative", "old-empty", "view", "lying"],
)
def test_a_foreign_or_future_database_gives_one_line(tmp_path: Path, script: str) -> None:
    path = tmp_path / "chats.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.close()
    read_everything(path)
    if "999" in script:
        with pytest.raises(StoreError, match=r"schema version is 999.*upgrade samplescope"):
            ChatStore(path)


def test_a_folder_or_a_fifo_in_place_of_the_database_gives_one_line(tmp_path: Path) -> None:
    import os

    folder = tmp_path / "folder.sqlite3"
    folder.mkdir()
    fifo = tmp_path / "fifo.sqlite3"
    os.mkfifo(fifo)
    for path in (folder, fifo):
        with pytest.raises(StoreError) as raised:
            ChatStore(path, timeout=0.1)
        assert str(path) in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("table", "column", "value"),
    [
        ("reply_steps", "arrays", 25_279_574_410),  # bytes(n) would be n zero bytes
        ("reply_steps", "arrays", "text"),
        ("reply_steps", "scalars", "{"),
        ("settings_changes", "settings", '{"temperature": "hot"}'),
        ("settings_changes", "settings", "[1, 2]"),
        ("replies", "step_layout", "{}"),
        ("replies", "stats", "["),
        ("replies", "created", "yesterday"),
        ("chats", "created", -1e300),
        ("chats", "created", 6.77680361916768e16),  # the C library's EOVERFLOW
        ("messages", "position", "first"),
    ],
)
def test_known_damage_reads_or_gives_one_line(
    pristine: Path, table: str, column: str, value: object
) -> None:
    path = copy_of(pristine)
    try:
        conn = sqlite3.connect(path)
        where = " WHERE rowid = 1" if table in ("chats", "messages", "replies") else ""
        conn.execute(f'UPDATE {table} SET "{column}" = ?{where}', (value,))
        conn.commit()
        conn.close()
        read_everything(path)
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)
