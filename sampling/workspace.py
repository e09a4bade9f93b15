"""Reusable scratch buffers for the per-token hot path.

Large temporaries (a vocabulary of float32 is 192 KiB) are served by fresh mmap'd
pages on every allocation, whose page faults cost more than the arithmetic; a
sampler therefore keeps its scratch arrays from one token to the next.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


class Workspace:
    """Named scratch arrays, reallocated only when the size or dtype changes."""

    def __init__(self) -> None:
        self._buffers: dict[str, npt.NDArray[Any]] = {}

    def array(self, name: str, size: int, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
        """A scratch array of `size` elements; its contents are undefined."""
        buffer = self._buffers.get(name)
        wanted = np.dtype(dtype)
        if buffer is None or buffer.shape[0] != size or buffer.dtype != wanted:
            buffer = np.empty(size, dtype=wanted)
            self._buffers[name] = buffer
        return buffer

    def ones(self, size: int, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
        """An array of ones (kept as such: never write to it)."""
        name = f"ones-{np.dtype(dtype).str}"
        buffer = self._buffers.get(name)
        if buffer is None or buffer.shape[0] != size:
            buffer = np.ones(size, dtype=dtype)
            self._buffers[name] = buffer
        return buffer
