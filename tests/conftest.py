"""Fixtures shared by the test files."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from backend.config.model_path import resolve_model_path
from backend.llama.reference import load_plain_by_default
from backend.store.store import ChatStore
from tests.hypothesis_profiles import load_profile as load_hypothesis_profile

# llama-cpp-python's `Llama` (the tests' independent references) loads the weights as
# samplescope does: without llama.cpp's extra buffer types (backend/llama/reference.py).
load_plain_by_default()

# Hypothesis's profile for this run: the full example counts by default, fewer in
# `make test-fast`, more for the fuzz suites in `make test-fuzz`.
load_hypothesis_profile()

# An app test allocates a great many short-lived objects (Textual's strips, segments
# and messages): the youngest generation is collected every 50,000 allocations, not
# 700 (make test-fast: 223 → 184 s of CPU; a worker's peak memory 629 → 758 MB).
gc.set_threshold(50_000, 10, 10)

if TYPE_CHECKING:
    from backend.session.llama_backend import LlamaBackend


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the fuzz suites' properties `fuzz` and the snapshot tests `snapshot`: both
    belong to `make test`, and `make test-fast` (the quick loop) leaves them out."""
    for item in items:
        if item.path.name.startswith("test_fuzz_"):
            item.add_marker(pytest.mark.fuzz)
        if "snap_compare" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.snapshot)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Collect the garbage once, then leave what is left out of later collections:
    pytest collects five times over at the end (to report what a finalizer raised,
    which this collection does too), each a full walk of a worker's heap, about 2 s
    of CPU a worker after a few hundred app tests."""
    del session
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def handler_errors_fail_the_test(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """An error a handler of the app raises is a notice there, and the app goes on
    (`tui.crash_log`); in a test it is a failure, unless the test is marked
    `handler_errors` (it expects one)."""
    from tui.crash_log import CrashLoggingApp

    raised: list[Exception] = []
    told = CrashLoggingApp.handler_failed

    def record(app: CrashLoggingApp, error: Exception) -> None:
        raised.append(error)
        told(app, error)

    monkeypatch.setattr(CrashLoggingApp, "handler_failed", record)
    yield
    if raised and request.node.get_closest_marker("handler_errors") is None:
        pytest.fail(f"a handler of the app raised {raised[0]!r}", pytrace=False)


@pytest.fixture(autouse=True)
def no_styles_kept_from_earlier_apps() -> Iterator[None]:
    """Textual caches a method of each widget's styles cache (`get_inner_outer`, 1,024
    entries) in one cache for the whole process, which keeps the styles caches, and
    every line each one drew, of the widgets of apps long gone: about 12,000 objects an
    app test, kept until the cache is full, and every full garbage collection walks
    them. Emptied after each test, a worker's heap stays the size of one app."""
    yield
    styles_cache = sys.modules.get("textual._styles_cache")
    if styles_cache is not None:
        styles_cache.StylesCache.get_inner_outer.cache_clear()


@pytest.fixture(autouse=True)
def notices_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A notice of the app stays until the test ends: Textual drops one after its
    timeout (3 to 30 s), and a test that reads `app._notifications` on a loaded machine
    could otherwise miss a notice said before a slow step."""
    from textual.notifications import Notification

    monkeypatch.setattr(Notification, "time_left", property(lambda notice: 86_400.0))


@pytest.fixture(scope="session")
def default_model_path() -> Path:
    """The model the tests run on: `$SAMPLESCOPE_MODEL` or the default SmolLM2 GGUF."""
    return resolve_model_path(None)


@pytest.fixture
def fresh_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model loaded in the test runs the load's batch-invariance probe, whatever this
    process loaded before (its answers are remembered per file and layout)."""
    from backend.llama import contexts

    monkeypatch.setattr(contexts, "_PROBE_ANSWERS", {})


@pytest.fixture(scope="session")
def llama_backend(
    default_model_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaBackend]:
    """One real LlamaBackend (n_ctx 2048, batch 64, 1 thread) shared by real-model tests.

    One thread: the test machine is shared, and an oversubscribed ggml thread pool
    slows down many times over. Tests that depend on the cache reset it first.
    """
    from backend.session.llama_backend import LlamaBackend

    log = tmp_path_factory.mktemp("llama-log") / "llama.log"
    backend = LlamaBackend.load(
        default_model_path, n_ctx=2048, n_batch=64, n_threads=1, log_path=log
    )
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def reference(default_model_path: Path) -> Iterator[object]:
    """llama-cpp-python's own `Llama` on the default model with every row's logits,
    in `llama_backend`'s context (batch 64, one thread): an independent computation
    to check samplescope's figures against."""
    from llama_cpp import Llama

    llm = Llama(
        model_path=str(default_model_path),
        n_ctx=2048,
        n_batch=64,
        n_ubatch=64,
        n_threads=1,
        n_threads_batch=1,
        logits_all=True,
        verbose=False,
    )
    yield llm
    llm.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChatStore]:
    """An empty chat database in the test's own folder."""
    with ChatStore(tmp_path / "chats.sqlite3") as opened:
        yield opened


@pytest.fixture(scope="session")
def q4_0_model_path(default_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Q4_0 copy of the default model (llama.cpp's quantizer, once a session): a model
    whose weights llama.cpp's CPU backend repacks (see tests/quantized_models.py)."""
    from tests.quantized_models import quantized_copy

    return quantized_copy(default_model_path, tmp_path_factory.mktemp("quantized"), name="Q4_0")


@pytest.fixture(scope="session")
def thinking_model_path(default_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the default model whose chat template thinks (it opens `<think>` in the
    generation prompt; see tests/thinking_models.py), once a session."""
    from tests.thinking_models import thinking_copy

    return thinking_copy(default_model_path, tmp_path_factory.mktemp("thinking"))
