"""Helpers shared by the TUI test files (a fake clock, waiting on the app)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from textual.pilot import Pilot


class StepClock:
    """A clock that advances a fixed amount per call: figures on screen stay fixed."""

    def __init__(self, step: float = 0.01) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def wait_until(
    pilot: Pilot[object], condition: Callable[[], bool], timeout: float = 60.0
) -> None:
    """Let the app run until `condition()` holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for the app")
        await asyncio.sleep(0.005)  # a plain sleep: the app runs meanwhile
