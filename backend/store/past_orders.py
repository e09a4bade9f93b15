"""The order a stored settings JSON ran with under an earlier version's rules: the
schema's migrations (`backend.store.schema`) rewrite each stored `samplers` to it, so
that every stored order runs exactly as stored.

The rules are frozen here as they were: adding a sampler today must not change how an
old reply replays.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

_V4_SAMPLER_NAMES = (
    "penalties",
    "dry",
    "top_n_sigma",
    "top_k",
    "typ_p",
    "top_p",
    "min_p",
    "xtc",
    "temperature",
)
"""The order names known up to version 4, in the order the rule compared against."""

_V4_LOGITS_SAMPLERS = ("penalties", "dry")
"""Up to version 4: the samplers placed before the temperature in the default order."""


def order_before_v5(values: dict[str, object]) -> list[str]:
    """The order a settings JSON of version 4 or earlier ran with.

    A missing `samplers` was the default list. The temperature moved last with
    `temperature_last`; otherwise the default list ran it right after the logits
    samplers, and any other list ran as given.
    """
    stored = values.get("samplers", _V4_SAMPLER_NAMES)
    samplers = [str(name) for name in stored] if isinstance(stored, list | tuple) else []
    if "temperature" not in samplers:
        return samplers
    others = [name for name in samplers if name != "temperature"]
    if values.get("temperature_last") is True:
        return [*others, "temperature"]
    if tuple(samplers) != _V4_SAMPLER_NAMES:
        return samplers
    logits = [name for name in others if name in _V4_LOGITS_SAMPLERS]
    rest = [name for name in others if name not in _V4_LOGITS_SAMPLERS]
    return [*logits, "temperature", *rest]


def order_before_v7(values: dict[str, object]) -> list[str] | None:
    """The order a settings JSON of version 6 or earlier ran with, written so that it
    runs as stored; None when it already does.

    Before version 7 the chain ran the order (`temperature_last` moving the
    temperature last), then moved smoothing, when on, right after the temperature,
    and adaptive-p, when on, to the end. Today `temperature_last` moves the
    temperature with smoothing right after it, ahead of adaptive-p ending the order,
    so the order that ran is also the one to store.
    """
    stored = values.get("samplers")
    if not isinstance(stored, list) or not all(isinstance(name, str) for name in stored):
        return None
    order = [str(name) for name in stored]
    if values.get("temperature_last") is True and "temperature" in order:
        order = [*(name for name in order if name != "temperature"), "temperature"]
    smoothing = values.get("smoothing_factor", 0.0)
    smoothed = isinstance(smoothing, int | float) and smoothing > 0.0
    if smoothed and "smoothing" in order and "temperature" in order:
        order.remove("smoothing")
        order.insert(order.index("temperature") + 1, "smoothing")
    target = values.get("adaptive_target", -1.0)
    if isinstance(target, int | float) and target >= 0.0 and "adaptive_p" in order:
        order.remove("adaptive_p")
        order.append("adaptive_p")
    return None if order == stored else order


def rewrite_orders(
    conn: sqlite3.Connection, order_of: Callable[[dict[str, object]], list[str] | None]
) -> None:
    """Write each stored settings JSON's `samplers` as `order_of` says it ran (None:
    as stored); a row that is no JSON object stays as it is (loading its reply names
    the problem)."""
    rows = conn.execute("SELECT reply_id, from_index, settings FROM settings_changes").fetchall()
    for reply_id, from_index, text in rows:
        try:
            values = json.loads(text)
        except ValueError:
            continue
        if not isinstance(values, dict):
            continue
        order = order_of(values)
        if order is None:
            continue
        values["samplers"] = order
        conn.execute(
            "UPDATE settings_changes SET settings = ? WHERE reply_id = ? AND from_index = ?",
            (json.dumps(values, sort_keys=True), reply_id, from_index),
        )
