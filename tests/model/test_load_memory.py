"""Loading a model holds no more memory than the work needs.

The load's batch-invariance probe decodes in a lockstep context of several streams;
made while the chat's context of n_ctx cells exists, its cache would add to the chat's
and raise the process's peak memory (the backend bench's "peak RSS vs
llama-cpp-python's"). And the file's check before llama.cpp reads it makes no Python
string of the vocabulary (llama.cpp has its own).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from backend.llama.context import LocalContext
from backend.session.llama_backend import LlamaBackend


def test_the_probe_context_is_freed_before_the_chat_context_is_made(
    default_model_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None
) -> None:
    live: list[int] = []  # n_seq_max of each context alive now
    made: list[tuple[int, int]] = []  # (n_seq_max, contexts alive with it) per context made
    init, close = LocalContext.__init__, LocalContext.close

    def tracked_init(self: LocalContext, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        live.append(self.n_seq_max)
        made.append((self.n_seq_max, len(live)))

    def tracked_close(self: LocalContext) -> None:
        if self._ctx is not None:
            live.remove(self.n_seq_max)
        close(self)

    monkeypatch.setattr(LocalContext, "__init__", tracked_init)
    monkeypatch.setattr(LocalContext, "close", tracked_close)
    backend = LlamaBackend.load(default_model_path, n_ctx=512, n_threads=1)
    try:
        assert backend.info.batch_invariant is True
        # The probe's four streams first, alone; then the chat's one, alone too.
        assert made == [(4, 1), (1, 1)]
        assert live == [1]
    finally:
        backend.close()
    assert live == []


def test_the_file_check_at_load_makes_no_vocabulary_strings(
    default_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backend.llama.gguf_reader import ValueReader

    def refused(self: ValueReader, count: int) -> list[str]:
        raise AssertionError(f"{count} strings decoded at load")

    monkeypatch.setattr(ValueReader, "_strings", refused)
    backend = LlamaBackend.load(default_model_path, n_ctx=512, n_threads=1)
    backend.close()
