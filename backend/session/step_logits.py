"""The raw logits of a reply's recent steps, kept in memory for "what if".

A past step recomputed under other settings must see exactly the logits and the
history the sampler saw. For the running reply's latest steps `StepLogits` keeps a
copy of both (the generating thread hands them over through
`LiveSettings.step_sink`); an older step, or one of another reply, is rebuilt
through the replay path instead (`backend.session.steer.recompute`).

Memory budget: `DEFAULT_BUDGET_BYTES` (64 MiB). A step costs its logits as float32
(4 bytes a token of the vocabulary: 196,608 bytes at SmolLM2's 49,152) plus its
history as a tuple (8 bytes a token of context, sharing the cache's int objects).
Measured on SmolLM2-135M, a 40-token reply to a one-line question: 197,076 bytes a
step, so the budget holds the latest ~340 steps of the current reply (fewer as the
context grows: 229,416 bytes a step at a full 4096-token context), about 60 at a
256k vocabulary. The oldest steps go first.

The buffers of dropped steps are reused for the next ones (within the same budget):
a fresh 196 KB buffer a token costs the generating thread its page faults: measured
mid-decode on SmolLM2, ~0.17 ms a token against ~0.055 ms for a copy into one
reused. (So a session's first reply still pays them, up to the budget.)
`get` hands out a copy, so a reused buffer is never seen outside.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from backend.session.run import StepInput

DEFAULT_BUDGET_BYTES = 64 * 2**20
"""The most the kept steps may take (logits and histories together)."""


def step_bytes(step: StepInput) -> int:
    """What one kept step costs in memory: its logits' buffer and its history tuple."""
    second = 0 if step.second is None else int(step.second.nbytes)
    small = 0 if step.small is None else int(step.small.nbytes)
    return int(step.logits.nbytes) + second + small + sys.getsizeof(step.history)


class StepLogits:
    """The latest steps of one reply: their logits and history, within a budget.

    `begin` (UI thread, before the reply's job starts) names the reply the next steps
    belong to; `keep` (the generating thread) copies each step in; `get` (UI thread)
    looks one up. A lock guards the table, so the threads never see it half-changed.

    Args:
        budget_bytes: The most the kept steps may take; the oldest are dropped first.
    """

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self._owner: object = None
        self._steps: OrderedDict[int, StepInput] = OrderedDict()
        self._bytes = 0
        self._spare: list[np.ndarray] = []
        """Logits buffers of dropped steps, for the next steps to copy into."""
        self._spare_bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """What the kept steps take now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._steps)

    def begin(self, owner: object, keep_before: int = 0) -> None:
        """The next steps belong to `owner`; of the steps kept so far, those before
        index `keep_before` stay (a branch shares its parent's steps before the fork),
        under the new owner."""
        with self._lock:
            self._owner = owner
            for index in [i for i in self._steps if i >= keep_before]:
                self._drop(self._steps.pop(index))

    def keep(
        self,
        index: int,
        logits: object,
        history: Sequence[int],
        second: object = None,
        small: object = None,
    ) -> None:
        """Copy step `index` in (a `LiveSettings.step_sink`; generating thread), with
        the negative prompt's logits of a guided step and the contrast model's."""
        source = np.asarray(logits)
        with self._lock:
            buffer = self._spare_buffer(source.shape)
        if buffer is None:
            buffer = np.array(source, dtype=np.float32, copy=True)
        else:
            np.copyto(buffer, source)
        kept_second = None if second is None else np.array(second, dtype=np.float32)
        kept_small = None if small is None else np.array(small, dtype=np.float32)
        step = StepInput(buffer, tuple(history), kept_second, kept_small)
        size = step_bytes(step)
        with self._lock:
            old = self._steps.pop(index, None)
            if old is not None:
                self._drop(old)
            if size > self.budget_bytes:
                return
            self._steps[index] = step
            self._bytes += size
            while self._bytes + self._spare_bytes > self.budget_bytes and self._spare:
                self._spare_bytes -= self._spare.pop().nbytes
            while self._bytes > self.budget_bytes:
                _, dropped = self._steps.popitem(last=False)
                self._drop(dropped)

    def _spare_buffer(self, shape: tuple[int, ...]) -> np.ndarray | None:
        """A dropped step's buffer of `shape` to copy into, or None (lock held)."""
        if self._spare and self._spare[-1].shape == shape:
            buffer = self._spare.pop()
            self._spare_bytes -= buffer.nbytes
            return buffer
        return None

    def _drop(self, step: StepInput) -> None:
        """`step` leaves the table: its buffer is kept for reuse if the budget has room
        (lock held)."""
        self._bytes -= step_bytes(step)
        buffer = step.logits
        if self._bytes + self._spare_bytes + buffer.nbytes <= self.budget_bytes:
            self._spare.append(buffer)
            self._spare_bytes += buffer.nbytes

    def get(self, owner: object, index: int) -> StepInput | None:
        """Step `index` of `owner`'s reply, if it is still kept (a copy of its logits:
        the kept buffer is reused once the step is dropped)."""
        with self._lock:
            if owner is not self._owner:
                return None
            step = self._steps.get(index)
            if step is None:
                return None
            second = None if step.second is None else step.second.copy()
            small = None if step.small is None else step.small.copy()
            return StepInput(step.logits.copy(), step.history, second, small)
