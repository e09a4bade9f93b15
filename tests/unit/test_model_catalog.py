"""`samplescope models`: GGUFs found in the Hugging Face cache, LM Studio, Ollama,
llama.cpp's cache and the config's model_dirs, each laid out here as its tool lays
it out, with tiny GGUFs (never the network)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from backend.config.config import ConfigError, effective_toml, load_config
from backend.config.model_catalog import (
    LocalModel,
    ModelNotFoundError,
    ModelSources,
    find_model,
    find_models,
)
from backend.config.model_path import resolve_model_path
from backend.config.paths import CONFIG_DIR_ENV
from tests.gguf_factory import Tensor, gguf_bytes
from tui.cli.main import main


def tiny_gguf(path: Path, *, file_type: int, context: int, template: bool) -> Path:
    metadata: dict[str, object] = {
        "general.architecture": "llama",
        "general.file_type": file_type,
        "llama.context_length": context,
    }
    if template:
        metadata["tokenizer.chat_template"] = "{{ messages }}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gguf_bytes(metadata, [Tensor("token_embd.weight", (8,), 0, 0)], 32))
    return path


def vocab_gguf(path: Path) -> Path:
    """A tokenizer alone, as llama.cpp's `models/ggml-vocab-*.gguf` test files are."""
    metadata: dict[str, object] = {
        "general.architecture": "llama",
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.tokens": ["<unk>", "a", "b"],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gguf_bytes(metadata, [], 0))
    return path


def lay_out(root: Path) -> ModelSources:
    """One model per tool, as each tool stores it, plus files that are not models."""
    hf = root / "hf" / "models--org--Tiny-GGUF"
    blob = tiny_gguf(hf / "blobs" / "aaaa", file_type=15, context=2048, template=True)
    snapshot = hf / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot / "tiny-Q4_K_M.gguf").symlink_to(Path("../../blobs/aaaa"))
    (hf / "blobs" / "cccc").write_text("{}")
    (snapshot / "config.json").symlink_to(Path("../../blobs/cccc"))
    (hf / "refs").mkdir()
    (hf / "refs" / "main").write_text("0123abcd")
    assert blob.is_file()

    lmstudio = root / "home" / ".lmstudio" / "models"
    tiny_gguf(
        lmstudio / "pub" / "Small-GGUF" / "small-Q8_0.gguf",
        file_type=7,
        context=4096,
        template=False,
    )

    ollama = root / "ollama"
    tiny_gguf(ollama / "blobs" / "sha256-bbbb", file_type=2, context=8192, template=True)
    manifest = {
        "schemaVersion": 2,
        "layers": [
            {
                "mediaType": "application/vnd.ollama.image.template",
                "digest": "sha256-none",
                "size": 1,
            },
            {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:bbbb", "size": 1},
        ],
    }
    for where in ("library/tinyllama/1b", "someone/other/latest"):
        path = ollama / "manifests" / "registry.ollama.ai" / where
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(manifest))

    llama_cache = root / "llama.cpp"
    tiny_gguf(llama_cache / "org_Tiny-GGUF_tiny-F16.gguf", file_type=1, context=512, template=False)
    mine = root / "mine"
    tiny_gguf(mine / "sub" / "tiny-Q4_K_M.gguf", file_type=15, context=2048, template=False)
    (mine / "broken.gguf").write_bytes(b"GGUF\x03")
    vocab_gguf(mine / "llama.cpp" / "models" / "ggml-vocab-llama-spm.gguf")
    return ModelSources(root / "hf", lmstudio, ollama, llama_cache, (mine,))


def test_every_tools_store_is_found_with_its_metadata(tmp_path: Path) -> None:
    models = find_models(lay_out(tmp_path))
    rows = [
        (m.name, m.source, m.quantization, m.architecture, m.context_length, m.chat_template)
        for m in models
        if not m.problem
    ]
    assert rows == [
        ("org/Tiny-GGUF/tiny-Q4_K_M.gguf", "huggingface", "Q4_K_M", "llama", 2048, True),
        ("pub/Small-GGUF/small-Q8_0.gguf", "lmstudio", "Q8_0", "llama", 4096, False),
        ("tinyllama:1b", "ollama", "Q4_0", "llama", 8192, True),
        ("someone/other:latest", "ollama", "Q4_0", "llama", 8192, True),
        ("org_Tiny-GGUF_tiny-F16.gguf", "llama.cpp", "F16", "llama", 512, False),
        ("llama.cpp/models/ggml-vocab-llama-spm.gguf", "model_dirs", "", "llama", 0, False),
        ("sub/tiny-Q4_K_M.gguf", "model_dirs", "Q4_K_M", "llama", 2048, False),
    ]
    assert [m.name for m in models if m.vocab_only] == [
        "llama.cpp/models/ggml-vocab-llama-spm.gguf"
    ]
    by_name = {m.name: m for m in models}
    assert by_name["tinyllama:1b"].path == tmp_path / "ollama" / "blobs" / "sha256-bbbb"
    hf = by_name["org/Tiny-GGUF/tiny-Q4_K_M.gguf"]
    assert hf.path.resolve() == (tmp_path / "hf/models--org--Tiny-GGUF/blobs/aaaa").resolve()
    assert hf.size == (tmp_path / "hf/models--org--Tiny-GGUF/blobs/aaaa").stat().st_size
    broken = by_name["broken.gguf"]
    assert (broken.source, broken.size) == ("model_dirs", 5)
    assert broken.problem != ""


def test_missing_stores_find_nothing(tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    assert find_models(ModelSources(nowhere, nowhere, nowhere, nowhere, (nowhere,))) == []


def test_a_name_is_the_full_name_or_a_unique_file_name(tmp_path: Path) -> None:
    models = find_models(lay_out(tmp_path))
    found = find_model("tinyllama:1b", models)
    assert found is not None and found.source == "ollama"
    found = find_model("small-Q8_0.gguf", models)
    assert found is not None and found.source == "lmstudio"
    assert find_model("absent.gguf", models) is None
    with pytest.raises(ModelNotFoundError, match="names several models"):
        find_model("tiny-Q4_K_M.gguf", models)
    # llama.cpp's -hf form: a repository's one GGUF, or its one of a quantization.
    for hf_name in ("org/Tiny-GGUF", "org/Tiny-GGUF:Q4_K_M", "org/Tiny-GGUF:q4_k_m"):
        found = find_model(hf_name, models)
        assert found is not None and found.name == "org/Tiny-GGUF/tiny-Q4_K_M.gguf"
    assert find_model("org/Tiny-GGUF:Q8_0", models) is None
    assert find_model("org/Other-GGUF", models) is None


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This machine's stores in a temporary folder, found through the tools' variables."""
    lay_out(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama"))
    monkeypatch.setenv("LLAMA_CACHE", str(tmp_path / "llama.cpp"))
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text(f'model_dirs = ["{tmp_path / "mine"}"]\n')
    monkeypatch.setenv(CONFIG_DIR_ENV, str(config))
    return tmp_path


def test_model_accepts_a_name_from_the_list(machine: Path) -> None:
    assert resolve_model_path("tinyllama:1b") == machine / "ollama" / "blobs" / "sha256-bbbb"
    assert resolve_model_path("org_Tiny-GGUF_tiny-F16.gguf") == (
        machine / "llama.cpp" / "org_Tiny-GGUF_tiny-F16.gguf"
    )
    # A name nothing has stays the path given (loading it says the file is missing).
    assert resolve_model_path("nothing.gguf") == Path("nothing.gguf")
    with pytest.raises(ModelNotFoundError):
        resolve_model_path("tiny-Q4_K_M.gguf")


def test_model_dirs_in_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('model_dirs = ["~/models", "/srv/gguf"]\n')
    config = load_config(path)
    assert config.model_dirs == ("~/models", "/srv/gguf")
    shown = tomllib.loads(effective_toml(config, model="m.gguf"))
    assert shown["model_dirs"] == ["~/models", "/srv/gguf"]
    path.write_text("model_dirs = 3\n")
    with pytest.raises(ConfigError, match="line 1: model_dirs: expected a list of folders"):
        load_config(path)


def test_the_models_command(machine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [entry["source"] for entry in listed] == [
        "huggingface",
        "lmstudio",
        "ollama",
        "ollama",
        "llama.cpp",
        "model_dirs",
        "model_dirs",
        "bundled",  # what the app's picker offers too; the vocabulary alone left out
    ]
    assert listed[-1]["name"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert set(listed[0]) == set(LocalModel.__dataclass_fields__)
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("tinyllama:1b  ")
    assert "Q4_0  llama  ctx 8192  chat template  [ollama]" in lines[2]
    assert "unreadable:" in lines[5]
    assert not any("vocab" in line for line in lines)
    assert main(["models", "--all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[6].startswith("llama.cpp/models/ggml-vocab-llama-spm.gguf  [model_dirs]")
    assert "vocabulary only (no weights)" in lines[6]


def test_the_app_picker_lists_what_the_models_command_lists(
    machine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli.commands import app

    assert main(["models", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [m.to_dict() for m in app.listed_models()] == listed
