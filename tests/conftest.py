"""Fixtures shared by the test files."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.model_path import resolve_model_path


@pytest.fixture(scope="session")
def default_model_path() -> Path:
    """The model the tests run on: `$SAMPLESCOPE_MODEL` or the default SmolLM2 GGUF."""
    return resolve_model_path(None)


@pytest.fixture(scope="session")
def llama_backend(default_model_path: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One real LlamaBackend (n_ctx 2048) shared by the real-model tests; reset it before use."""
    from backend.llama_backend import LlamaBackend

    log = tmp_path_factory.mktemp("llama-log") / "llama.log"
    backend = LlamaBackend.load(default_model_path, n_ctx=2048, n_batch=64, n_threads=1, log_path=log)
    yield backend
    backend.close()
