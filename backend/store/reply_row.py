"""A reply's row in `replies`, derived from `ReplyRecord`'s fields.

Each field of `ReplyRecord` is stored in the column of its name through the codec of
its type (a `ModelRef` in three columns: `model_path`, `model_size`, `model_sha256`),
or it is derived when the reply is read (`DERIVED`: counted, or gathered from other
tables). The store's writes and its read name the fields they set or get; the column
lists, the placeholders and the conversions come from here. So a new stored reply
field is its `ReplyRecord` field, its migration (`ALTER TABLE replies ADD COLUMN …`),
and its value where it is known (`ChatStore.begin_reply` or `ReplyWriter.finish`);
a field of a type without a codec adds one to `_BY_TYPE`.

`tests/unit/test_store_reply_row.py` checks that every record field is a column or
declared derived, and that a new database's `replies` has exactly these columns.
"""

from __future__ import annotations

import json
import sqlite3
import types
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Any, get_type_hints

from backend.chat.events import GenerationStats
from backend.store.records import INTERRUPTED, ModelRef, ReplyRecord
from sampling.analysis.loops import Loop

DERIVED: Mapping[str, str] = {
    "number": "its turn's place among the chat's generated turns, counted when read",
    "branch": "its place among its turn's branches, counted when read",
    "token_ids": "the reply's reply_tokens rows",
    "settings_changes": "the reply's settings_changes rows",
    "replay_problem": "found while its stored settings are read",
}
"""`ReplyRecord` fields that have no column, and where each comes from."""

EXTRA_COLUMNS: Mapping[str, str] = {
    "step_layout": "how the reply's reply_steps rows are packed (backend.store.steps)",
}
"""`replies` columns that are no `ReplyRecord` field, and what each holds."""

Row = sqlite3.Row | Mapping[str, Any]
"""A row read by column name."""

KEY = "id"
"""The field SQLite assigns when a row is inserted (never written)."""


def to_datetime(seconds: float) -> datetime:
    """A stored time (unix seconds) as an aware UTC datetime.

    Raises:
        ValueError: It lies outside the years datetime holds (a damaged row).
    """
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError) as error:  # OSError: the C library's EOVERFLOW
        raise ValueError(f"time {seconds!r} is out of range ({error})") from None


@dataclass(frozen=True, slots=True)
class Codec:
    """How a value of one type is stored, and read back.

    Attributes:
        encode: The value's column values, one per suffix.
        decode: The value from its column values (in the suffixes' order).
        suffixes: Appended to the field's name, one per column ("": the name itself).
    """

    encode: Callable[[Any], tuple[object, ...]]
    decode: Callable[..., Any]
    suffixes: tuple[str, ...] = ("",)


def _one(encode: Callable[[Any], object], decode: Callable[[Any], Any]) -> Codec:
    """A codec of one column."""
    return Codec(lambda value: (encode(value),), decode)


def _optional(codec: Codec) -> Codec:
    """`codec` for `T | None`: None is NULL in every column, and back."""
    nulls = (None,) * len(codec.suffixes)
    return Codec(
        lambda value: nulls if value is None else codec.encode(value),
        lambda *stored: None if all(v is None for v in stored) else codec.decode(*stored),
        codec.suffixes,
    )


def _seconds(value: datetime | float) -> float:
    """A time as stored: unix seconds (the store's clock gives seconds already)."""
    return value.timestamp() if isinstance(value, datetime) else float(value)


def _stats(text: str) -> GenerationStats | None:
    """Stored figures; None when they cannot be read (they are shown, not replayed).
    Keys this version does not know are left out."""
    try:
        values: dict[str, Any] = json.loads(text)
        known = GenerationStats.__dataclass_fields__
        return GenerationStats(**{k: v for k, v in values.items() if k in known})
    except (ValueError, TypeError, AttributeError):
        return None


def _loop(text: str) -> Loop | None:
    """A stored loop; None when it cannot be read (it is shown, not replayed: a
    damaged one is no reason to refuse the reply)."""
    try:
        return Loop.from_dict(json.loads(text))
    except ValueError:
        return None


_BY_TYPE: Mapping[object, Codec] = {
    int: _one(int, int),
    str: _one(str, str),
    datetime: _one(_seconds, to_datetime),
    ModelRef: Codec(
        lambda model: (model.path, model.size, model.sha256),
        lambda path, size, sha256: ModelRef(str(path), int(size), str(sha256)),
        ("_path", "_size", "_sha256"),
    ),
    GenerationStats: _one(lambda stats: json.dumps(asdict(stats)), _stats),
    Loop: _one(lambda loop: json.dumps(loop.to_dict()), _loop),
}
"""The codec of each stored field type (`T | None` is derived from `T`'s)."""

_BY_NAME: Mapping[str, Codec] = {
    # Seeds reach 2**64 - 1, beyond SQLite's INTEGER: stored as decimal text.
    "seed": _one(str, int),
    # NULL until the reply finishes: read back, a reply whose process died.
    "finish_reason": _one(
        lambda reason: None if reason is None else str(reason),
        lambda stored: INTERRUPTED if stored is None else str(stored),
    ),
}
"""Fields stored otherwise than their type's codec would."""


@dataclass(frozen=True, slots=True)
class ReplyColumn:
    """One record field's columns and codec."""

    field: str
    codec: Codec

    @property
    def columns(self) -> tuple[str, ...]:
        """Its column names."""
        return tuple(self.field + suffix for suffix in self.codec.suffixes)

    def encode(self, value: object) -> dict[str, object]:
        """Its columns' values for a field value."""
        return dict(zip(self.columns, self.codec.encode(value), strict=True))

    def decode(self, row: Row) -> object:
        """The field value from a row read by column name."""
        return self.codec.decode(*(row[column] for column in self.columns))


def codec_of(name: str, hint: object) -> Codec:
    """The codec of a field named `name` of type `hint`.

    Raises:
        TypeError: No codec stores that type: add one to `_BY_TYPE`, or declare the
            field in `DERIVED`.
    """
    if name in _BY_NAME:
        return _BY_NAME[name]
    if hint in _BY_TYPE:
        return _BY_TYPE[hint]
    if isinstance(hint, types.UnionType):
        rest = [arg for arg in hint.__args__ if arg is not type(None)]
        if len(rest) == 1 and len(hint.__args__) == 2 and rest[0] in _BY_TYPE:
            return _optional(_BY_TYPE[rest[0]])
    raise TypeError(f"reply field {name!r} of type {hint} has no column codec")


def columns_of(record: type) -> tuple[ReplyColumn, ...]:
    """The stored columns of a record type's fields (those not in `DERIVED`)."""
    hints = get_type_hints(record)
    return tuple(
        ReplyColumn(f.name, codec_of(f.name, hints[f.name]))
        for f in fields(record)
        if f.name not in DERIVED
    )


REPLY_COLUMNS = columns_of(ReplyRecord)
"""`ReplyRecord`'s stored fields, in its order."""

_BY_FIELD = {column.field: column for column in REPLY_COLUMNS}

ALL_COLUMNS = (*(c for column in REPLY_COLUMNS for c in column.columns), *EXTRA_COLUMNS)
"""Every column of `replies`."""


def row_values(values: Mapping[str, object]) -> dict[str, object]:
    """The columns, with their stored values, of some fields' values (by field name).

    Raises:
        KeyError: A name is no stored field.
    """
    row: dict[str, object] = {}
    for name, value in values.items():
        if name not in _BY_FIELD:
            raise KeyError(f"{name!r} is no stored reply field")
        row.update(_BY_FIELD[name].encode(value))
    return row


def insert_reply_row(conn: sqlite3.Connection, values: Mapping[str, object]) -> int:
    """Insert a reply's row with these fields (the others NULL or their default);
    returns its id."""
    row = row_values(values)
    marks = ", ".join("?" for _ in row)
    cursor = conn.execute(
        f"INSERT INTO replies ({', '.join(row)}) VALUES ({marks})", tuple(row.values())
    )
    return int(cursor.lastrowid or 0)


def update_reply_row(conn: sqlite3.Connection, reply_id: int, values: Mapping[str, object]) -> None:
    """Set these fields of reply `reply_id`'s row."""
    row = row_values(values)
    assignments = ", ".join(f"{column} = ?" for column in row)
    conn.execute(f"UPDATE replies SET {assignments} WHERE id = ?", (*row.values(), reply_id))


def copy_reply_row(conn: sqlite3.Connection, source_id: int, values: Mapping[str, object]) -> int:
    """Insert a row copied from reply `source_id`'s, with these fields set; returns
    its id. (A ghost is copied from its unfinished reply: nothing of the finish is
    written yet, so none of it is copied.)"""
    row = row_values(values)
    copied = [c for c in ALL_COLUMNS if c != KEY and c not in row]
    chosen = ", ".join(["?"] * len(row) + copied)
    cursor = conn.execute(
        f"INSERT INTO replies ({', '.join([*row, *copied])}) "
        f"SELECT {chosen} FROM replies WHERE id = ?",
        (*row.values(), source_id),
    )
    return int(cursor.lastrowid or 0)


def select_list(table: str, **expressions: str) -> str:
    """The SELECT list of the record's columns of `table` (an alias), each named as
    its column; `expressions` reads a column another way (`text="coalesce(…)"`)."""
    return ", ".join(
        f"{expressions[column]} AS {column}" if column in expressions else f"{table}.{column}"
        for column in (c for reply_column in REPLY_COLUMNS for c in reply_column.columns)
    )


def reply_fields(row: Row) -> dict[str, Any]:
    """The stored fields' values of a row read by column name (`select_list`)."""
    return {column.field: column.decode(row) for column in REPLY_COLUMNS}
