"""Schema version 5 writes into every stored settings record the order its reply ran with."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from backend.store.schema import migrate
from backend.store.store import ChatStore
from sampling.chain import build_chain
from sampling.settings.record import SamplerSettings

NAMES_UP_TO_V4 = [
    "penalties",
    "dry",
    "top_n_sigma",
    "top_k",
    "typ_p",
    "top_p",
    "min_p",
    "xtc",
    "temperature",
]
TEMPERATURE_FIRST = ["penalties", "dry", "temperature", *NAMES_UP_TO_V4[2:-1]]

# (settings as version 4 or earlier stored them, the order they ran with)
CASES: list[tuple[dict[str, Any], list[str]]] = [
    ({"seed": 1}, TEMPERATURE_FIRST),  # before `samplers` and `temperature_last` existed
    ({"temperature_last": False}, TEMPERATURE_FIRST),
    ({"temperature_last": True}, NAMES_UP_TO_V4),
    ({"samplers": NAMES_UP_TO_V4, "temperature_last": False}, TEMPERATURE_FIRST),
    ({"samplers": NAMES_UP_TO_V4, "temperature_last": True}, NAMES_UP_TO_V4),
    ({"samplers": TEMPERATURE_FIRST, "temperature_last": False}, TEMPERATURE_FIRST),
    ({"samplers": TEMPERATURE_FIRST, "temperature_last": True}, NAMES_UP_TO_V4),
    ({"samplers": ["top_k", "temperature", "min_p"]}, ["top_k", "temperature", "min_p"]),
    (
        {"samplers": ["top_k", "temperature", "min_p"], "temperature_last": True},
        ["top_k", "min_p", "temperature"],
    ),
    ({"samplers": ["min_p", "xtc"], "temperature_last": True}, ["min_p", "xtc"]),
    ({"samplers": []}, []),
]


def v4_database(path: Path, stored: list[dict[str, Any]]) -> None:
    """A version-4 file with one reply whose settings change at each token."""
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, target=4)
    conn.execute("INSERT INTO chats (id, title, created) VALUES (1, 'c', 0)")
    conn.execute(
        "INSERT INTO messages (id, chat_id, position, role, content, created) "
        "VALUES (1, 1, 0, 'assistant', 'x', 0)"
    )
    conn.execute(
        "INSERT INTO replies (id, message_id, model_path, model_size, model_sha256, seed, "
        "rng, created) VALUES (1, 1, '/m.gguf', 1, 'aa', '0', 'pcg64', 0)"
    )
    for index, values in enumerate(stored):
        conn.execute("INSERT INTO reply_tokens VALUES (1, ?, 5)", (index,))
        conn.execute("INSERT INTO settings_changes VALUES (1, ?, ?)", (index, json.dumps(values)))
    conn.close()


def test_every_stored_order_is_written_as_it_ran(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    v4_database(path, [values for values, _ in CASES])
    with ChatStore(path) as store:
        reply = store.load_chat(1).replies[0]
    for index, (values, ran) in enumerate(CASES):
        settings = reply.settings_at(index)
        assert settings.samplers == tuple(ran), values
        assert settings.order == tuple(ran), values
        # Everything else is as stored.
        rest = {k: v for k, v in values.items() if k != "samplers"}
        assert {k: settings.to_dict()[k] for k in rest} == rest
    conn = sqlite3.connect(path)
    stored = [json.loads(t) for (t,) in conn.execute("SELECT settings FROM settings_changes")]
    conn.close()
    assert [row["samplers"] for row in stored] == [ran for _, ran in CASES]


@pytest.mark.parametrize(("values", "ran"), CASES)
def test_the_order_needs_no_list_of_known_names(values: dict[str, Any], ran: list[str]) -> None:
    """Once written out, the order runs as stored whatever names samplescope knows."""
    migrated = SamplerSettings.from_dict({**values, "samplers": ran})
    assert migrated.order == tuple(ran)
    assert migrated.with_changes(temperature_last=False).order == tuple(ran)


def test_unreadable_settings_are_left_for_loading_to_name(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    v4_database(path, [{"seed": 1}])
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE settings_changes SET settings = '[1, 2'")
    migrate(conn)
    assert conn.execute("SELECT settings FROM settings_changes").fetchone()[0] == "[1, 2"
    conn.close()


OLD_CHAT_ORDER = [
    "penalties",
    "dry",
    "top_n_sigma",
    "top_k",
    "typ_p",
    "top_p",
    "epsilon_cutoff",
    "eta_cutoff",
    "tfs",
    "top_a",
    "min_p",
    "xtc",
    "smoothing",
    "adaptive_p",
    "temperature",
]
"""New chats' order at version 5: smoothing and adaptive-p before the temperature,
which the chain then moved (smoothing right after it, adaptive-p last)."""

OLD_FIRST_ORDER = ["penalties", "dry", "temperature", *OLD_CHAT_ORDER[2:-1]]
"""`SamplerSettings()`'s order at version 5."""

ON = {"smoothing_factor": 0.4, "adaptive_target": 0.3, "top_k": 5}

# (settings as version 5 stored them, the units they ran, in turn)
V5_CASES: list[tuple[dict[str, Any], list[str]]] = [
    ({"samplers": OLD_CHAT_ORDER, **ON}, ["top_k", "temperature", "smoothing", "adaptive_p"]),
    ({"samplers": OLD_FIRST_ORDER, **ON}, ["temperature", "smoothing", "top_k", "adaptive_p"]),
    (
        {"samplers": OLD_FIRST_ORDER, "temperature_last": True, **ON},
        ["top_k", "temperature", "smoothing", "adaptive_p"],
    ),
    ({"samplers": OLD_CHAT_ORDER, "smoothing_factor": 0.4}, ["temperature", "smoothing"]),
    (
        # adaptive-p switched on and not named joins at the end, then as now.
        {"samplers": ["smoothing", "top_k", "temperature"], **ON},
        ["top_k", "temperature", "smoothing", "adaptive_p"],
    ),
    ({"samplers": OLD_CHAT_ORDER, "top_k": 5}, ["top_k", "temperature"]),
]


def test_version_6_writes_each_order_as_the_chain_ran_it(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    v4_database(path, [{"seed": 1} for _ in V5_CASES])
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, target=5)
    for index, (values, _) in enumerate(V5_CASES):
        conn.execute(
            "UPDATE settings_changes SET settings = ? WHERE from_index = ?",
            (json.dumps(values), index),
        )
    conn.close()
    with ChatStore(path) as store:
        reply = store.load_chat(1).replies[0]
    for index, (values, ran) in enumerate(V5_CASES):
        settings = reply.settings_at(index)
        assert list(build_chain(settings).names) == ran, values
        rest = {k: v for k, v in values.items() if k != "samplers"}
        assert {k: settings.to_dict()[k] for k in rest} == rest
    # An order the chain ran as stored is left as it was.
    assert reply.settings_at(5).samplers == tuple(OLD_CHAT_ORDER)
