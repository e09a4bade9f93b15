""" "Copy as command" in the compare view, on the real default model: the `generate`
line copied gives the column's very tokens when it is run, for a preset that runs
the temperature first as for one with llama.cpp's chain, and for a model steered by a
control vector (at a strength of the slider's); a sweep sample's line, of a sweep run
with control vectors and a contrast model, names both and gives its tokens."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from backend.chat.protocol import ChatMessage
from backend.config.paths import CONFIG_DIR_ENV
from backend.llama.control_vector import ControlVector, Steering
from backend.session.llama_backend import LlamaBackend
from tests.helpers import HostApp, copied_in_sweep_screen, wait_done
from tui.cli.commands import sweep as sweep_cli
from tui.cli.main import main
from tui.compare.columns import CompareColumn
from tui.compare.screen import CompareScreen

VECTOR = Path(__file__).parent.parent / "fixtures" / "control_vector" / "happy.gguf"
SIZE = (140, 40)
CATS = [ChatMessage("system", "You are terse."), ChatMessage("user", "Write a line about cats.")]


@pytest.mark.anyio
async def test_each_columns_command_gives_its_tokens(
    llama_backend: Any,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tui.resources import shipped_presets

    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "config"))
    presets = shipped_presets()
    names = ["TopP p=0.9 t=0.8", "llama.cpp defaults", "All t=1.5"]
    columns = [CompareColumn(name, presets[name]) for name in names]
    llama_backend.reset()
    copied: list[str] = []
    app = HostApp(lambda: CompareScreen(llama_backend, CATS, columns, 7, max_tokens=24))
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        title = str(screen.column_views[0].query_one(".column-title").render())
        assert "t-first" in title  # the order the label does not say
        assert "t-first" not in str(screen.column_views[1].query_one(".column-title").render())
        tokens = [view.token_ids for view in screen.column_views]
        for key in ("1", "2", "3"):
            await pilot.press(key, "y")
        # the lines hold the prompt: shown as text, never read as markup
        assert all(not n.markup for n in app._notifications if n.message in copied)
    assert len(copied) == 3
    for line, column_tokens in zip(copied, tokens, strict=True):
        words = shlex.split(line)
        assert words[:2] == ["samplescope", "generate"]
        assert main([*words[1:], "--json", "--threads", "1", "--ctx", "1024"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert tuple(result["token_ids"]) == column_tokens
    assert "--samplers" in copied[0] and "--top-p 0.9" in copied[0]
    # `generate --preset` starts from the preset as the column did.
    argv = ["generate", CATS[1].content, "--system", CATS[0].content, "--preset", names[0]]
    argv += ["-s", "7", "--max-tokens", "24", "--json", "--threads", "1", "--ctx", "1024"]
    assert main(argv) == 0
    assert tuple(json.loads(capsys.readouterr().out)["token_ids"]) == tokens[0]
    # The temperature-first column would differ under the usual flags alone.
    assert tokens[0] != tokens[1]


def run_line(line: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, ...]:
    """Run a copied `samplescope generate` line; the tokens it gives."""
    words = shlex.split(line)
    assert words[:2] == ["samplescope", "generate"]
    assert main([*words[1:], "--json", "--threads", "1", "--ctx", "1024"]) == 0
    return tuple(json.loads(capsys.readouterr().out)["token_ids"])


@pytest.mark.anyio
async def test_a_steered_columns_command_names_its_control_vectors_and_gives_its_tokens(
    default_model_path: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tui.resources import shipped_presets

    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "config"))
    vector = tmp_path / "a folder with spaces" / "happy.gguf"  # quoted in the line
    vector.parent.mkdir()
    vector.write_bytes(VECTOR.read_bytes())
    steering = Steering((ControlVector(vector, 2.0),), (10, 25))
    backend = LlamaBackend.load(default_model_path, n_threads=1, n_ctx=1024, steering=steering)
    presets = shipped_presets()
    columns = [
        CompareColumn(name, presets[name].with_changes(control_strength=1.5))
        for name in ("llama.cpp defaults", "All t=1.5")
    ]
    copied: list[str] = []
    app = HostApp(lambda: CompareScreen(backend, CATS, columns, 7, max_tokens=16))
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = app.compare_screen
            assert screen is not None
            await wait_done(pilot, screen)
            tokens = screen.column_views[1].token_ids
            await pilot.press("2", "y")
    finally:
        backend.close()
    [line] = copied
    words = shlex.split(line)
    assert words[words.index("--control-vector") + 1] == f"{vector.resolve()}:2.0"
    assert words[words.index("--control-vector-layers") + 1] == "10,25"
    assert words[words.index("--control-strength") + 1] == "1.5"
    assert run_line(line, capsys) == tokens
    # Without the vector the line gives another reply: the flags are needed.
    unsteered = [w for w in words if w not in (f"{vector.resolve()}:2.0", "10,25")]
    unsteered = [w for w in unsteered if not w.startswith("--control-vector")]
    assert run_line(shlex.join(unsteered), capsys) != tokens


@pytest.mark.anyio
async def test_a_sweep_samples_command_names_the_contrast_model_and_control_vectors(
    q4_0_model_path: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["sweep", "--prompt", "Name a colour.", "--grid", "t=0.7,1.5", "--samples", "1"]
    argv += ["--seed", "5", "--max-tokens", "12", "--threads", "1", "--ctx", "1024"]
    argv += ["--contrast-model", str(q4_0_model_path), "--set", "contrast_beta=0.5"]
    argv += ["--control-vector", f"{VECTOR}:3", "--json", "--no-save"]
    assert main(argv) == 0
    path = tmp_path / "sweep.json"
    path.write_text(capsys.readouterr().out, encoding="utf-8")
    result = sweep_cli.read_result(path)  # as a kept sweep reads back
    assert result.contrast_model == str(q4_0_model_path.resolve())
    assert result.control_vectors == ((str(VECTOR.resolve()), 3.0),)
    [line] = await copied_in_sweep_screen(result, "down", "enter", "y")  # t=1.5, its sample
    words = shlex.split(line)
    assert words[words.index("--contrast-model") + 1] == str(q4_0_model_path.resolve())
    assert words[words.index("--control-vector") + 1] == f"{VECTOR.resolve()}:3.0"
    [sample] = [s for s in result.samples if s.figures.setting == 1]
    assert run_line(line, capsys) == sample.token_ids
