"""numpy's BLAS kept to one thread once llama.cpp decodes in the process.

numpy's OpenBLAS runs a large vector product (an `np.dot` over a 49,152-token
vocabulary) on several threads, which then spin a while waiting for more work. On a
machine whose cores llama.cpp's threads take, those spinning threads steal the cores
the next `llama_decode` needs: on 2 cores a guided reply's two-token batch took 52.9 ms
instead of 15.1 ms, a two-column compare's the same batch 14.7 ms. The samplers'
vector products take microseconds on one thread, so the process keeps BLAS at one
thread from the first model load on (`threadpoolctl`).
"""

from __future__ import annotations

import threading

from threadpoolctl import threadpool_limits

_lock = threading.Lock()
_limited = False


def one_blas_thread() -> None:
    """Limit numpy's BLAS to one thread for the rest of the process (once)."""
    global _limited
    with _lock:
        if not _limited:
            threadpool_limits(limits=1, user_api="blas")
            _limited = True
