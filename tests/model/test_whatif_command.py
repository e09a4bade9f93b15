"""What-if's "copy as command" (`y`), on the real default model: the line copied,
run, gives the very tokens of the branch the what-if's `b` ▶ makes in the app. From
a reply's first token that is a `generate` line; from a later one a `branch` line of
the saved chat (`generate` cannot keep the tokens before it)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from textual.widgets import OptionList

from backend.config.paths import CONFIG_DIR_ENV
from backend.session.llama_backend import LlamaBackend
from backend.store.store import ChatStore
from tests.helpers import chat_of, nth_reply_finished, send_message, wait_until
from tests.model.test_whatif_pilot import SETTINGS, SIZE, whatif_at
from tui.app import SamplescopeApp
from tui.cli.main import main
from tui.widgets.alternatives import AlternativesScreen

pytestmark = pytest.mark.anyio


async def branch_and_copy(
    llama_backend: LlamaBackend, store: ChatStore, index: int
) -> tuple[str, tuple[int, ...], int]:
    """Reply, move two settings, what-if at token `index`: the line `y` copies, the
    tokens of the branch `b` ▶ makes, and the token the what-if drew."""
    llama_backend.reset()
    app = SamplescopeApp(
        llama_backend, settings=SETTINGS, max_tokens=12, cursor_blink=False, store=store
    )
    copied: list[str] = []
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "Name three colours.")
        app.apply_setting("top_k", 3)
        app.apply_setting("seed", 7)
        step = await whatif_at(pilot, app, index)
        await pilot.press("y")
        await wait_until(pilot, lambda: bool(copied))
        await pilot.press("b")
        await wait_until(pilot, lambda: isinstance(app.screen, AlternativesScreen))
        assert app.screen.query_one(OptionList).highlighted_option.id == f"token-{step.token_id}"
        await pilot.press("enter")
        branch = await nth_reply_finished(pilot, app, 2)
        assert chat_of(app).conversation.replies[-1].tokens[index].step.token_id == step.token_id
    [line] = copied
    return line, tuple(branch.token_ids), step.token_id


def run_line(line: str, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, ...]:
    """Run a copied line (its words after `samplescope`) with `--json`; its tokens."""
    assert main([*shlex.split(line)[1:], "--json", "--threads", "1", *more]) == 0
    return tuple(json.loads(capsys.readouterr().out)["token_ids"])


async def test_a_whatif_from_a_later_token_copies_the_branch_line_that_makes_its_branch(
    llama_backend: LlamaBackend,
    store: ChatStore,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "config"))
    line, tokens, drawn = await branch_and_copy(llama_backend, store, 3)
    assert shlex.split(line)[:2] == ["samplescope", "branch"]
    assert f"--at 4 --token {drawn}" in line and "--top-k 3" in line and "--seed 7" in line
    assert run_line(line, capsys, "--db", str(store.path)) == tokens


async def test_a_whatif_from_the_first_token_copies_a_generate_line(
    llama_backend: LlamaBackend,
    store: ChatStore,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "config"))
    line, tokens, drawn = await branch_and_copy(llama_backend, store, 0)
    assert shlex.split(line)[:2] == ["samplescope", "generate"]
    got = run_line(line, capsys, "--ctx", str(llama_backend.info.n_ctx))
    assert got == tokens and got[0] == drawn
