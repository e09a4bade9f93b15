"""Helpers shared by the TUI test files: a fake clock, waiting on the app, a compare host."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.pilot import Pilot

from tui.compare.result import CompareResult
from tui.compare.screen import CompareScreen


class StepClock:
    """A clock that advances a fixed amount per call: figures on screen stay fixed."""

    def __init__(self, step: float = 0.01) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def wait_until(
    pilot: Pilot[Any], condition: Callable[[], bool], timeout: float = 60.0
) -> None:
    """Let the app run until `condition()` holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for the app")
        await asyncio.sleep(0.005)  # a plain sleep: the app runs meanwhile


class HostApp(App[None]):
    """Opens one compare screen and keeps its result."""

    def __init__(self, make_screen: Callable[[], CompareScreen]) -> None:
        super().__init__()
        self._make_screen = make_screen
        self.results: list[CompareResult | None] = []
        self.compare_screen: CompareScreen | None = None

    def on_mount(self) -> None:
        self.compare_screen = self._make_screen()
        self.push_screen(self.compare_screen, self.results.append)


async def wait_done(pilot: Pilot[Any], screen: CompareScreen, timeout: float = 120.0) -> None:
    """Wait until the screen's run has ended and its messages are handled."""
    for _ in range(int(timeout / 0.05)):
        if screen.is_mounted and screen.done:
            break
        await pilot.pause(0.05)
    assert screen.done, "the comparison did not finish in time"
    await pilot.pause()


def token_ids_of(screen: CompareScreen) -> list[tuple[int, ...]]:
    return [view.token_ids for view in screen.column_views]


def last_chunk(prefilled: int, n_batch: int) -> int:
    """How many tokens running a cached prompt again recomputes: its last prefill chunk.

    Args:
        prefilled: How many tokens the prompt's own prefill computed (in n_batch chunks).
        n_batch: The chunk size.
    """
    return prefilled - (prefilled - 1) // n_batch * n_batch
