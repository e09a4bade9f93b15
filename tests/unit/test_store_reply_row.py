"""A reply's row is derived from `ReplyRecord`: every field is a column or declared
derived, the columns are the table's, and each field comes back as it was stored."""

from __future__ import annotations

import dataclasses
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from backend.chat.events import GenerationStats, RewindEvent
from backend.store.records import INTERRUPTED, ModelRef, ReplyRecord, SettingsChange
from backend.store.reply_row import (
    ALL_COLUMNS,
    DERIVED,
    EXTRA_COLUMNS,
    REPLY_COLUMNS,
    columns_of,
    reply_fields,
    row_values,
)
from backend.store.store import ChatStore
from sampling.analysis.loops import Loop
from sampling.settings.record import SamplerSettings
from sampling.settings.spec import MAX_SEED
from tests.helpers import DateClock

MODEL = ModelRef(path="/models/m.gguf", size=1234, sha256="ab" * 32)
SETTINGS = SamplerSettings(temperature=0.7, top_k=40, seed=MAX_SEED)


def test_every_reply_field_is_a_column_or_declared_derived() -> None:
    names = [f.name for f in dataclasses.fields(ReplyRecord)]
    stored = [column.field for column in REPLY_COLUMNS]
    assert sorted(stored + list(DERIVED)) == sorted(names)
    assert not set(stored) & set(DERIVED)


def test_the_replies_table_has_exactly_the_records_columns(tmp_path: Path) -> None:
    ChatStore(tmp_path / "chats.sqlite3").close()
    conn = sqlite3.connect(tmp_path / "chats.sqlite3")
    table = [row[1] for row in conn.execute("PRAGMA table_info(replies)")]
    conn.close()
    assert sorted(table) == sorted(ALL_COLUMNS)
    assert len(set(ALL_COLUMNS)) == len(ALL_COLUMNS)
    assert set(EXTRA_COLUMNS) <= set(table)


def test_a_new_field_gets_its_column_and_codec_from_its_type() -> None:
    @dataclasses.dataclass(frozen=True)
    class Grown:
        id: int
        model: ModelRef
        when: datetime | None
        note: str | None = None
        number: int = 1  # declared derived: no column

    columns = {column.field: column.columns for column in columns_of(Grown)}
    assert columns == {
        "id": ("id",),
        "model": ("model_path", "model_size", "model_sha256"),
        "when": ("when",),
        "note": ("note",),
    }


def test_a_field_of_a_type_without_a_codec_is_refused_by_name() -> None:
    @dataclasses.dataclass(frozen=True)
    class Odd:
        id: int
        ratio: complex

    with pytest.raises(TypeError, match="'ratio'"):
        columns_of(Odd)


def test_every_stored_field_round_trips_through_its_columns() -> None:
    record = ReplyRecord(
        id=3,
        number=1,
        message_id=2,
        model=MODEL,
        seed=MAX_SEED,
        rng="xorshift128",
        max_tokens=9,
        n_ctx=2048,
        n_batch=None,
        finish_reason="error",
        error="boom",
        stats=GenerationStats(prompt_tokens=20, decode_tokens=5, cached_tokens=None),
        token_ids=(),
        settings_changes=(SettingsChange(0, SETTINGS),),
        text="It is",
        created=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        finished=None,
        parent_id=1,
        fork_at=4,
        mode="completion",
        decoding='{"lockstep": 2}',
        loop=Loop(3, 1, 2),
    )
    stored = {column.field: getattr(record, column.field) for column in REPLY_COLUMNS}
    row = row_values(stored)
    assert row["seed"] == str(MAX_SEED) and row["model_size"] == 1234
    assert reply_fields(row) == stored


def test_an_unfinished_reason_reads_as_interrupted_and_damage_as_none() -> None:
    row: dict[str, object] = dict.fromkeys(ALL_COLUMNS)
    required = {"id": 1, "message_id": 1, "model": MODEL, "seed": 1, "rng": "pcg64"}
    row.update(row_values({**required, "created": 0.0, "mode": "chat", "text": ""}))
    row.update(stats="{not json", loop='{"period": 0}')
    values = reply_fields(row)
    assert values["finish_reason"] == INTERRUPTED
    assert values["stats"] is None and values["loop"] is None


def test_a_ghost_copies_every_field_its_reply_had_when_it_went_back(tmp_path: Path) -> None:
    with ChatStore(tmp_path / "chats.sqlite3", clock=DateClock()) as store:
        chat = store.new_chat("Sky", MODEL)
        store.add_message(chat, "user", "Why?")
        writer = store.begin_reply(
            chat,
            MODEL,
            SETTINGS,
            max_tokens=9,
            n_ctx=512,
            n_batch=8,
            mode="completion",
            decoding='{"lockstep": 2}',
        )
        for index, (token, piece) in enumerate([(11, "It"), (12, " is"), (13, " red")]):
            writer.append_token(index, token, SETTINGS, piece)
        ghost_id = writer.rewind(RewindEvent(2, (13,), " red", "red", (13,)))
        writer.append_token(2, 14, SETTINGS, " blue")
        writer.finish("eos", GenerationStats(decode_tokens=3), "It is blue", loop=Loop(1, 0, 2))
        branches = store.load_chat(chat).messages[-1].branches
    reply, ghost = branches
    assert ghost.id == ghost_id and ghost.parent_id == reply.id and ghost.fork_at == 2
    assert ghost.text == "It is red" and ghost.is_ghost
    assert ghost.stats is None and ghost.loop is None and ghost.error is None
    set_by_the_rewind = {"id", "parent_id", "fork_at", "created"}
    set_by_the_finish = {"finish_reason", "error", "stats", "finished", "loop", "text"}
    for column in REPLY_COLUMNS:
        name = column.field
        if name not in set_by_the_rewind | set_by_the_finish:
            assert getattr(ghost, name) == getattr(reply, name), name
