"""The thread count a model gets when none is asked for: all cores, or
$SAMPLESCOPE_THREADS (how `make test` fits llama.cpp's threads to its test workers)."""

from __future__ import annotations

import os

import pytest

from backend.llama.runtime import THREADS_ENV, default_threads, preferred_threads


def test_all_cores_unless_the_environment_says_fewer(monkeypatch: pytest.MonkeyPatch) -> None:
    cores = os.cpu_count() or 1
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert preferred_threads() == default_threads() == cores
    monkeypatch.setenv(THREADS_ENV, "1")
    assert preferred_threads() == 1
    assert default_threads() == cores  # the most threads a model may have is unchanged
    monkeypatch.setenv(THREADS_ENV, str(cores + 5))
    assert preferred_threads() == cores
    for ignored in ("", "0", "-2", "two"):
        monkeypatch.setenv(THREADS_ENV, ignored)
        assert preferred_threads() == cores
