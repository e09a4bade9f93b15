"""numpy's BLAS runs on one thread once a model is loaded (its spinning threads would
take the cores llama.cpp decodes on: backend/llama/blas_threads.py)."""

from __future__ import annotations

from threadpoolctl import threadpool_info

from backend.session.llama_backend import LlamaBackend


def test_blas_is_one_thread_once_a_model_is_loaded(llama_backend: LlamaBackend) -> None:
    del llama_backend  # loaded: the limit is in force for the process
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas, "numpy's BLAS was not found"
    assert all(pool["num_threads"] == 1 for pool in blas)
