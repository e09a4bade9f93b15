"""The load's batch-invariance probe decodes on one thread and gives the threads back.

With OpenMP, a thread that has run a parallel decode makes every later decode from
another thread several times slower; the app loads the model on one worker thread and
generates on another, so the probe must not run a parallel decode.
"""

from __future__ import annotations

from pathlib import Path

import llama_cpp
import pytest

from backend.llama.context import LocalContext
from backend.session.llama_backend import LlamaBackend


def test_the_probe_runs_on_one_thread_and_restores_the_count(
    default_model_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None
) -> None:
    counts: list[int] = []
    decode = LocalContext.decode

    def counting(self: LocalContext, tokens: list[int], start: int, seq: int) -> int:
        counts.append(int(llama_cpp.llama_n_threads(self._ctx)))
        return decode(self, tokens, start, seq)

    monkeypatch.setattr(LocalContext, "decode", counting)
    backend = LlamaBackend.load(default_model_path, n_ctx=512, n_threads=2)
    try:
        assert backend.info.batch_invariant is True
        assert counts and set(counts) == {1}  # every probe decode, on one thread
        chat = backend.runtime._context.chat  # type: ignore[attr-defined]
        assert int(llama_cpp.llama_n_threads(chat._ctx)) == 2
        assert int(llama_cpp.llama_n_threads_batch(chat._ctx)) == 2
    finally:
        backend.close()
