"""How many threads llama.cpp computes with: all cores by default, never more."""

from __future__ import annotations

import os

from backend.llama.context import LlamaError


def default_threads() -> int:
    """All cores: measured on 2 cores, decode runs faster on 2 threads than on 1."""
    return max(1, os.cpu_count() or 1)


def check_thread_count(n_threads: int) -> None:
    """Raise unless `n_threads` is between 1 and the number of cores.

    More threads than cores only make ggml's threads wait on each other: with
    thousands, a step takes minutes and the reply seems to hang.

    Raises:
        LlamaError: The count is out of that range; the message gives the range.
    """
    cores = default_threads()
    if not 1 <= n_threads <= cores:
        raise LlamaError(
            f"invalid thread count {n_threads}: expected 1 to {cores} (the cores of this machine)"
        )
