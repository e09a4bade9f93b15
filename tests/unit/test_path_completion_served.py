"""The model picker's path completion lists no folder outside samplescope's own when the
app is served (its entries would tell the browser's user what the machine holds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.config import paths
from tui.models.path_completion import complete_path


def test_a_served_app_completes_only_inside_its_own_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "data"
    (own / "models").mkdir(parents=True)
    (own / "models" / "mine.gguf").write_bytes(b"")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret-model.gguf").write_bytes(b"")
    monkeypatch.setenv("SAMPLESCOPE_DATA_DIR", str(own))
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))

    assert complete_path(f"{outside}/sec") == f"{outside}/secret-model.gguf"  # not served
    monkeypatch.setattr(paths, "_OWN_FOLDERS_ONLY", True)
    assert complete_path(f"{outside}/sec") == f"{outside}/sec"
    assert complete_path(f"{tmp_path}/else") == f"{tmp_path}/else"
    assert complete_path(f"{own}/models/mi") == f"{own}/models/mine.gguf"
