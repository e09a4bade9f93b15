"""Fuzzing model discovery with hostile trees: a Hugging Face cache and an Ollama store
built from random entries (links out of the store, broken links, link loops, FIFOs,
non-UTF-8 and path-like references, malformed manifests, garbage GGUFs).

Listing never raises and never hangs, and every model it lists (and every cached
snapshot `--hf` would open) lies inside its store: the GGUF kept outside is never
listed. Examples per run come from the hypothesis profile (tests/conftest.py): two
properties of 100 examples each (each builds a tree of up to 12 entries).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.config.hf_fetch import cached_files
from backend.config.model_catalog import LocalModel, ModelSources, find_models
from tests.unit.test_model_catalog import tiny_gguf

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SECONDS = 20
"""Longer than any listing of a dozen entries takes: past it, the listing hangs."""

HASH = "0123456789abcdef0123456789abcdef01234567"
REPOS = ["models--org--A", "models--org--B", "models--x", "models--a--b--c", "datasets--o--d"]
REVISIONS = [HASH, "f" * 40, "main", "x y"]
FILES = ["m.gguf", "sub/m.gguf", "m-Q4_K_M.gguf", "README.md", ".gguf"]
KINDS = [
    "gguf", "garbage", "blob-link", "outside-link", "broken-link", "loop", "fifo",
    "dir-outside", "dir-loop", "empty",
]  # fmt: skip
REFS = [HASH.encode(), HASH.encode() + b"\n", b"/", b"../..", b"\xff\xfe", b"", b"a" * 100_000]

hf_entry = st.tuples(
    st.sampled_from(REPOS), st.sampled_from(REVISIONS), st.sampled_from(FILES),
    st.sampled_from(KINDS),
)  # fmt: skip
ref_entry = st.tuples(st.sampled_from(REPOS), st.one_of(st.sampled_from(REFS), st.just(None)))

model_layer = "application/vnd.ollama.image.model"
manifests = st.one_of(
    st.builds(
        lambda digest: {"layers": [{"mediaType": model_layer, "digest": digest}]},
        st.sampled_from(["sha256:ab12", "sha256:../../x", "../../outside", "sha256:", 7]),
    ),
    st.sampled_from([{"layers": "x"}, {"layers": [None, 1]}, [], "x", {"layers": [[[[]]]]}]),
    st.recursive(st.none() | st.integers() | st.text(max_size=4), st.lists, max_leaves=6),
)
ollama_entry = st.tuples(
    st.sampled_from(["registry.ollama.ai/library/m/t", "h/ns/m/t", "top", "a/b"]),
    st.one_of(manifests.map(lambda value: json.dumps(value).encode()), st.binary(max_size=20)),
    st.sampled_from(["gguf", "outside-link", "fifo", "manifest-link", "none"]),
)


@contextmanager
def no_hang() -> Iterator[None]:
    """Fail instead of hanging when the block runs past `SECONDS`."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"model discovery ran past {SECONDS} s: it hangs")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def place(path: Path, kind: str, outside: Path, blob: Path | None = None) -> None:
    """Put one hostile entry at `path` (a no-op when something is there already)."""
    if path.exists() or path.is_symlink():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "gguf":
        tiny_gguf(path, file_type=2, context=8, template=False)
    elif kind == "garbage":
        path.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 20)
    elif kind == "blob-link" and blob is not None:
        tiny_gguf(blob, file_type=15, context=8, template=True)
        path.symlink_to(os.path.relpath(blob, path.parent))
    elif kind in ("outside-link", "manifest-link"):
        path.symlink_to(outside / "secret.gguf")
    elif kind == "broken-link":
        path.symlink_to(path.parent / "nowhere")
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir-outside":
        path.symlink_to(outside, target_is_directory=True)
    elif kind == "dir-loop":
        path.symlink_to(path.parent, target_is_directory=True)
    elif kind == "empty":
        path.write_bytes(b"")


def listed_inside(models: list[LocalModel], roots: dict[str, Path]) -> None:
    for model in models:
        root = roots[model.source]
        assert model.path.resolve().is_relative_to(root.resolve()), (model, root)
        assert model.path.resolve().name != "secret.gguf", model


@HEALTH
@given(st.lists(hf_entry, max_size=12), st.lists(ref_entry, max_size=4))
def test_a_hostile_hub_cache_lists_only_what_lies_inside_it(
    entries: list[tuple[str, str, str, str]], refs: list[tuple[str, bytes | None]]
) -> None:
    root = Path(tempfile.mkdtemp(prefix="samplescope-fuzz-hf-"))
    try:
        outside = root / "outside"
        tiny_gguf(outside / "secret.gguf", file_type=2, context=8, template=False)
        cache = root / "hub"
        for repo, revision, name, kind in entries:
            folder = cache / repo
            (folder / "snapshots").mkdir(parents=True, exist_ok=True)
            if kind in ("dir-outside", "dir-loop"):
                place(folder / "snapshots" / revision, kind, outside)
            else:
                blob = folder / "blobs" / f"{abs(hash((revision, name))):x}"
                place(folder / "snapshots" / revision / name, kind, outside, blob)
        for repo, ref in refs:
            main = cache / repo / "refs" / "main"
            main.parent.mkdir(parents=True, exist_ok=True)
            if ref is None:
                place(main, "fifo", outside)
            elif not main.exists():
                main.write_bytes(ref)
        with no_hang():
            models = find_models(ModelSources(cache, None, None, None))
            listed_inside(models, {"huggingface": cache})
            for repo in REPOS:
                name = repo.removeprefix("models--").replace("--", "/")
                found = cached_files(name, cache)
                if found is not None:
                    snapshot, files = found
                    assert snapshot.resolve().is_relative_to(cache.resolve())
                    for file in files:
                        assert (snapshot / file).resolve().is_relative_to(cache.resolve())
    finally:
        shutil.rmtree(root, ignore_errors=True)


@HEALTH
@given(st.lists(ollama_entry, max_size=8))
def test_a_hostile_ollama_store_lists_only_what_lies_inside_it(
    entries: list[tuple[str, bytes, str]],
) -> None:
    root = Path(tempfile.mkdtemp(prefix="samplescope-fuzz-ollama-"))
    try:
        outside = root / "outside"
        tiny_gguf(outside / "secret.gguf", file_type=2, context=8, template=False)
        store = root / "ollama"
        (store / "manifests").mkdir(parents=True)
        for where, manifest, blob_kind in entries:
            path = store / "manifests" / where
            if blob_kind == "manifest-link":
                place(path, blob_kind, outside)
            elif not path.exists() and not path.parent.is_file():
                path.parent.mkdir(parents=True, exist_ok=True)
                if not path.is_dir():
                    path.write_bytes(manifest)
            if blob_kind != "none":
                place(store / "blobs" / "sha256-ab12", blob_kind, outside)
        with no_hang():
            listed_inside(find_models(ModelSources(None, None, store, None)), {"ollama": store})
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_fifo_reference_does_not_hang_listing(tmp_path: Path) -> None:
    repo = tmp_path / "models--org--A"
    tiny_gguf(repo / "snapshots" / HASH / "m.gguf", file_type=2, context=8, template=False)
    (repo / "refs").mkdir()
    os.mkfifo(repo / "refs" / "main")
    os.mkfifo(repo / "refs" / "pr")
    with no_hang():
        names = [model.name for model in find_models(ModelSources(tmp_path, None, None, None))]
        assert names == ["org/A/m.gguf"]
        assert cached_files("org/A", tmp_path) == (repo / "snapshots" / HASH, ["m.gguf"])


def test_a_snapshot_linked_out_of_the_cache_is_not_followed(tmp_path: Path) -> None:
    tiny_gguf(tmp_path / "outside" / "secret.gguf", file_type=2, context=8, template=False)
    repo = tmp_path / "hub" / "models--org--A"
    (repo / "snapshots").mkdir(parents=True)
    (repo / "snapshots" / HASH).symlink_to(tmp_path / "outside", target_is_directory=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(HASH)
    with no_hang():
        assert find_models(ModelSources(tmp_path / "hub", None, None, None)) == []
        assert cached_files("org/A", tmp_path / "hub") is None
