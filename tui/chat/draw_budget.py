"""How much of a core the UI thread may spend while a reply streams.

When llama.cpp has a thread on every core, each millisecond the UI thread works is
a millisecond the decode loses: its threads meet at barriers after every operation,
so one of them pre-empted stalls them all. A redraw of a token's line, the bars and
the status costs Textual a few milliseconds, so at the full cadence the app decoded
~10% slower than `samplescope generate` on 2 cores.

`DrawBudget` is a token bucket over the UI thread's CPU time: it earns `share`
seconds of CPU per second of wall time, every bit of UI work spends from it (the
redraws, and all else the thread does), and a redraw waits while it is overdrawn.
Nothing is lost by waiting: the tokens are in the conversation, and the next redraw
shows all of them. With a core to spare the decode does not feel the UI, and the app
draws at its full cadence (no budget).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

DRAW_SHARE = 0.02
"""The UI thread's share of one core while llama.cpp's threads take every core."""
SAVED_UP = 0.02
"""Seconds of CPU the budget keeps when unspent (a burst), and the most it goes
into debt for one long frame (so a slow layout does not hold the text back)."""
LONGEST_WAIT = 0.5
"""A streaming reply is redrawn at least this often (seconds), over budget or not."""


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def budget_for(decode_threads: int, cores: int | None = None) -> DrawBudget | None:
    """A budget when the decode's threads take every core, else None (draw freely)."""
    if decode_threads < (cores if cores is not None else usable_cores()):
        return None
    return DrawBudget(DRAW_SHARE)


class DrawBudget:
    """Allows a redraw when the UI thread has spent at most `share` of a core.

    Args:
        share: CPU seconds the UI thread may use per wall second.
        saved_up: The most credit (and debt) the bucket holds, in CPU seconds.
        longest_wait: A redraw is allowed after this many seconds without one.
        clock: Wall time (seconds).
        cpu_clock: The UI thread's CPU time (seconds); call `allows` on that thread.
    """

    def __init__(
        self,
        share: float,
        *,
        saved_up: float = SAVED_UP,
        longest_wait: float = LONGEST_WAIT,
        clock: Callable[[], float] = time.monotonic,
        cpu_clock: Callable[[], float] = time.thread_time,
    ) -> None:
        if not 0.0 < share <= 1.0:
            raise ValueError(f"draw share must be in (0, 1], got {share}")
        self.share = share
        self.saved_up = saved_up
        self.longest_wait = longest_wait
        self._clock = clock
        self._cpu_clock = cpu_clock
        self.credit = saved_up
        """CPU seconds the UI thread may still spend (negative: in debt)."""
        self._wall = clock()
        self._cpu = cpu_clock()
        self._drawn_at = self._wall
        self.drawn = 0
        """Redraws allowed since `restart`."""
        self.held = 0
        """Redraws held back since `restart`."""

    def restart(self) -> None:
        """A reply starts: a full bucket, counted from now."""
        self._wall = self._drawn_at = self._clock()
        self._cpu = self._cpu_clock()
        self.credit = self.saved_up
        self.drawn = self.held = 0

    def allows(self) -> bool:
        """Whether a redraw may happen now (it is then counted as done)."""
        wall, cpu = self._clock(), self._cpu_clock()
        earned = self.share * (wall - self._wall)
        spent = cpu - self._cpu
        self.credit = max(-self.saved_up, min(self.saved_up, self.credit + earned - spent))
        self._wall, self._cpu = wall, cpu
        if self.credit >= 0 or wall - self._drawn_at >= self.longest_wait:
            self._drawn_at = wall
            self.drawn += 1
            return True
        self.held += 1
        return False
