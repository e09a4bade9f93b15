"""The test suite keeps its own rules: one model thread, no silent skips of our code."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
OUR_PACKAGES = ("sampling", "backend", "tui")


def _calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def _name(call: ast.Call) -> str:
    return ast.unparse(call.func)


def _keywords(call: ast.Call) -> set[str]:
    return {keyword.arg for keyword in call.keywords if keyword.arg is not None}


def test_every_model_load_in_the_tests_uses_one_thread() -> None:
    # The test machine is shared: a model on all cores slows every other test down.
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for call in _calls(path):
            name = _name(call)
            loads = name.endswith("LlamaBackend.load") or name == "llama_cpp.Llama"
            if not loads or "vocab_only" in _keywords(call) or "n_threads" in _keywords(call):
                continue
            offenders.append(f"{path.relative_to(TESTS)}:{call.lineno} {name}")
    assert offenders == []


def test_no_test_skips_when_one_of_our_modules_is_missing() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for call in _calls(path):
            if not _name(call).endswith("importorskip") or not call.args:
                continue
            module = call.args[0]
            if isinstance(module, ast.Constant) and str(module.value).startswith(OUR_PACKAGES):
                offenders.append(f"{path.relative_to(TESTS)}:{call.lineno} {module.value}")
    assert offenders == []
