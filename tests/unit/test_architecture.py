"""The one-way import rule: tui → backend → sampling, and sampling is pure numpy."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STDLIB = set(sys.stdlib_module_names)


def imported_roots(package: str) -> dict[str, set[str]]:
    """Top-level module names imported by each file of a package."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        roots: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = roots
    return found


@pytest.mark.parametrize(
    ("package", "allowed"),
    [
        ("sampling", {"numpy", "sampling"}),
        (
            "backend",
            {"numpy", "sampling", "backend", "llama_cpp", "tokenizers", "jinja2", "platformdirs"},
        ),
    ],
)
def test_imports_go_one_way(package: str, allowed: set[str]) -> None:
    offenders = {
        file: sorted(roots - allowed - STDLIB)
        for file, roots in imported_roots(package).items()
        if roots - allowed - STDLIB
    }
    assert offenders == {}


def test_checker_sees_a_forbidden_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sampling").mkdir()
    (tmp_path / "sampling" / "bad.py").write_text("from tui.app import App\nimport textual\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert imported_roots("sampling") == {"sampling/bad.py": {"tui", "textual"}}
