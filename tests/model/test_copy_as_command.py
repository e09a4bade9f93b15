""" "Copy as command" in the compare view, on the real default model: the `generate`
line copied gives the column's very tokens when it is run, for a preset that runs
the temperature first as for one with llama.cpp's chain."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from backend.chat.protocol import ChatMessage
from backend.config.paths import CONFIG_DIR_ENV
from tests.helpers import HostApp, wait_done
from tui.cli.main import main
from tui.compare.columns import CompareColumn
from tui.compare.screen import CompareScreen

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
