"""Model discovery never fails as a whole and never leaves its roots: a malformed Ollama
manifest is passed over, a digest or a cached reference naming a path is refused."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from backend.config.hf_fetch import cached_files
from backend.config.model_catalog import ModelSources, find_models
from tests.gguf_factory import ARRAY, INT32, error_of, gguf_string, write
from tests.unit.test_model_catalog import lay_out


@pytest.mark.parametrize(
    ("where", "manifest"),
    [
        ("registry.ollama.ai/library/bad/layers", {"layers": "not a list"}),
        ("registry.ollama.ai/library/bad/objects", {"layers": [1, "two", None]}),
        ("registry.ollama.ai/library/bad/deep", {"layers": [[[[[]]]]]}),
        ("top", {"layers": []}),  # a manifest directly in manifests/
        (
            "registry.ollama.ai/library/bad/escape",
            {
                "layers": [
                    {
                        "mediaType": "application/vnd.ollama.image.model",
                        "digest": "../../../etc/passwd",
                    }
                ]
            },
        ),
    ],
)
def test_a_malformed_ollama_manifest_is_passed_over(
    tmp_path: Path, where: str, manifest: object
) -> None:
    sources = lay_out(tmp_path)
    assert sources.ollama is not None
    path = sources.ollama / "manifests" / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest))
    models = find_models(sources)
    names = {m.name for m in models}
    assert "tinyllama:1b" in names and not any("bad" in n or "top" in n for n in names)
    assert all(Path("/etc/passwd") != m.path for m in models)


@pytest.mark.parametrize("ref", [b"/", b"../..", b"\xff\xfe", b"0123abcd/../../..", b""])
def test_a_cached_reference_that_is_no_commit_hash_is_not_followed(
    tmp_path: Path, ref: bytes
) -> None:
    repo = tmp_path / "models--org--Tiny"
    newest = repo / "snapshots" / ("a" * 40)
    newest.mkdir(parents=True)
    (newest / "tiny.gguf").write_bytes(b"GGUF")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_bytes(ref)
    found = cached_files("org/Tiny", tmp_path)
    assert found == (newest, ["tiny.gguf"])


def test_a_cached_reference_ending_in_a_newline_is_followed(tmp_path: Path) -> None:
    repo = tmp_path / "models--org--Tiny"
    for commit, stamp in (("b" * 40, 1_000_000), ("c" * 40, 2_000_000)):
        folder = repo / "snapshots" / commit
        folder.mkdir(parents=True)
        (folder / "tiny.gguf").write_bytes(b"GGUF")
        os.utime(folder, (stamp, stamp))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("b" * 40 + "\n")
    assert cached_files("org/Tiny", tmp_path) == (repo / "snapshots" / ("b" * 40), ["tiny.gguf"])


def test_metadata_arrays_nested_thousands_deep_are_a_corrupt_file_not_a_recursion_error(
    tmp_path: Path,
) -> None:
    nested = struct.pack("<I", ARRAY) + struct.pack("<IQ", ARRAY, 1) * 5000
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_string("deep") + nested
    path = write(tmp_path / "deep.gguf", data + struct.pack("<IQ", INT32, 0))
    assert "arrays nested deeper than 32 in the metadata" in error_of(path)
    (listed,) = find_models(ModelSources(None, None, None, None, (tmp_path,)))
    assert "nested deeper" in listed.problem


@pytest.mark.parametrize("flaw", ["broken link", "reference with a newline"])
def test_one_flaw_in_a_cached_repository_does_not_hide_its_ggufs(tmp_path: Path, flaw: str) -> None:
    sources = lay_out(tmp_path)
    assert sources.hf_cache is not None
    repo = sources.hf_cache / "models--org--Tiny-GGUF"
    if flaw == "broken link":
        (repo / "snapshots" / "0123abcd" / "gone.json").symlink_to(Path("../../blobs/none"))
    else:
        (repo / "refs" / "main").write_text("0123abcd\n")
        (repo / "refs" / "other").write_text("feedface")  # a commit not in the cache
    names = [m.name for m in find_models(sources)]
    assert names.count("org/Tiny-GGUF/tiny-Q4_K_M.gguf") == 1
