"""The config file's [loops] table: what a repetition loop found in a reply does.

[loops]
mode = "mark"       # "off", "mark" (shown) or "stop" (the reply ends on it)
min_period = 1      # vLLM's rule: the smallest period in [min_period, max_period]
max_period = 128    # whose last copy repeats min_count times back to back
min_count = 4
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from backend.session.loop_watch import LOOP_MODES, LoopGuard, LoopMode
from sampling.analysis.loops import LoopRule

LOOP_KEYS = ("mode", "min_period", "max_period", "min_count")

Fail = Callable[[str | None, str, str], Exception]
"""Makes the error for a bad entry: (table, key, problem)."""


def parse_loops(table: object, fail: Fail) -> LoopGuard:
    """The [loops] table as a `LoopGuard` (each key optional).

    Raises:
        Exception: What `fail` makes, for an unknown key or a bad value.
    """
    if not isinstance(table, dict):
        raise fail(None, "loops", "expected a table: [loops]")
    for key in table:
        if key not in LOOP_KEYS:
            raise fail("loops", key, f"unknown key; expected one of {', '.join(LOOP_KEYS)}")
    mode = table.get("mode", LoopGuard().mode)
    if mode not in LOOP_MODES:
        raise fail("loops", "mode", f"expected one of {', '.join(LOOP_MODES)}, got {mode!r}")
    default = LoopRule()
    values: dict[str, Any] = {}
    for key in LOOP_KEYS[1:]:
        value = table.get(key, getattr(default, key))
        if not isinstance(value, int) or isinstance(value, bool):
            raise fail("loops", key, f"expected a whole number, got {value!r}")
        values[key] = value
    try:
        rule = LoopRule(**values)
    except ValueError as error:
        key = next((k for k in LOOP_KEYS if f"invalid {k}=" in str(error)), "min_period")
        raise fail("loops", key, str(error)) from None
    return LoopGuard(cast(LoopMode, mode), rule)


def loops_toml(guard: LoopGuard) -> list[str]:
    """The [loops] table's lines for `samplescope config`."""
    rule = guard.rule
    return [
        "[loops]",
        f'mode = "{guard.mode}"',
        f"min_period = {rule.min_period}",
        f"max_period = {rule.max_period}",
        f"min_count = {rule.min_count}",
    ]
