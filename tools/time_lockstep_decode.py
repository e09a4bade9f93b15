"""Time `llama_decode` in a guided reply against a two-column compare (the same batch
shape: two sequences of one token a step, one KV stream each).

    .venv/bin/python tools/time_lockstep_decode.py [THREADS]

Wraps `LocalContext.decode_batch` with a timer and prints, for each run, the batch
shape and the mean milliseconds a decode. This is how numpy's BLAS threads were found
spinning on llama.cpp's cores (backend/llama/blas_threads.py): before the limit, a
guided step took 52.9 ms against 17.7 ms for compare on 2 cores.
"""

from __future__ import annotations

import collections
import sys
import time
from collections.abc import Sequence

import backend.llama.context as context_module
from backend.bench.guidance import GUIDED, PLAIN, PROMPT
from backend.chat.protocol import LiveSettings
from backend.config.model_path import default_model_path
from backend.llama.context import BatchToken, LocalContext
from backend.session.llama_backend import LlamaBackend

counts: collections.Counter[tuple[int, int]] = collections.Counter()
seconds: dict[tuple[int, int], float] = collections.defaultdict(float)
decode_batch = LocalContext.decode_batch


def timed(self: LocalContext, entries: Sequence[BatchToken]) -> int:
    """`decode_batch`, timed by (tokens, sequences)."""
    started = time.perf_counter()
    result = decode_batch(self, entries)
    key = (len(entries), self.n_seq_max)
    counts[key] += 1
    seconds[key] += time.perf_counter() - started
    return result


def main(threads: int) -> None:
    """Run a guided reply and a two-column compare, and print the mean decode times."""
    context_module.LocalContext.decode_batch = timed  # type: ignore[method-assign]
    backend = LlamaBackend.load(default_model_path(), n_ctx=2048, n_threads=threads)
    ban = ((backend.runtime.eos, float("-inf")),)
    try:
        for label, settings, columns in (("guided", GUIDED, 1), ("compare", PLAIN, 2)):
            counts.clear()
            seconds.clear()
            backend.reset()
            lives = [
                LiveSettings(settings.with_changes(seed=seed, logit_bias=ban))
                for seed in range(columns)
            ]
            list(backend.generate_many(PROMPT, lives, max_tokens=32))
            for key, count in counts.items():
                mean_ms = 1000 * seconds[key] / count
                print(f"{label}: {key[0]} tokens, {key[1]} streams: {mean_ms:.1f} ms")
    finally:
        backend.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
