"""The score screen with a second model, on the real default model (the base) and a
Q4_0 copy of it (the test): each token's KLD in the table and the coloured text, the
jumps, both models' candidates for the selected token, the same figures as `samplescope
kld`, and nothing of an old result left after a refused model."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table
from textual.widgets import DataTable, Static, TextArea

from backend.session.llama_backend import LlamaBackend
from tests.helpers import chat_of, wait_until
from tests.tiny_models import spm_vocab, write_tiny_llama
from tui.app import SamplescopeApp
from tui.cli.main import main
from tui.score import kld_view
from tui.score.screen import ScoreScreen

pytestmark = pytest.mark.anyio

TEXT = (
    "The quick brown fox jumps over the lazy dog. It was a sunny day in Paris, 1889, and "
    "the engineers on the tower were painting its iron a reddish brown."
)
SCREENSHOT_ENV = "SAMPLESCOPE_KLD_SCREENSHOT"
"""Where to write the screen as SVG (unset: nowhere)."""


@pytest.fixture(scope="module")
def llama(default_model_path: Path) -> Iterator[LlamaBackend]:
    backend = LlamaBackend.load(default_model_path, n_ctx=2048, n_threads=1)
    yield backend
    backend.close()


def shown_lines(widget: Static) -> list[str]:
    """The lines a widget draws, stripped, the empty ones left out."""
    strips = widget.render_lines(widget.region.reset_offset)
    return [line for line in (strip.text.strip() for strip in strips) if line]


async def scored_screen(pilot: object, app: SamplescopeApp, base: Path) -> ScoreScreen:
    await wait_until(pilot, lambda: chat_of(app).ready)
    await pilot.press("f8")  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: isinstance(app.screen, ScoreScreen))
    screen = app.screen
    assert isinstance(screen, ScoreScreen)
    screen.query_one(TextArea).load_text(TEXT)
    await pilot.press("ctrl+b")  # type: ignore[attr-defined]
    await pilot.press(*str(base), "enter")  # type: ignore[attr-defined]
    assert screen.base == base
    await pilot.press("ctrl+s")  # type: ignore[attr-defined]
    return screen


async def test_two_models_token_by_token(llama: LlamaBackend, q4_0_model_path: Path) -> None:
    app = SamplescopeApp(llama, cursor_blink=False)
    async with app.run_test(size=(150, 48)) as pilot:
        screen = await scored_screen(pilot, app, q4_0_model_path)
        await wait_until(pilot, lambda: screen.pair is not None, 180)
        pair = screen.pair
        assert pair is not None and pair.summary is not None
        result = pair.result
        assert result.plan.every_position  # a short text: every position scored
        n = result.positions.size
        assert n == len(pair.texts) - 1
        kld = result.divergence.kld
        assert np.all(np.isfinite(kld)) and kld.max() > 0
        table = screen.query_one(DataTable)
        assert table.row_count == n
        for row in range(n):
            cells = [str(c) for c in table.get_row_at(row)]
            assert cells[0] == str(int(result.positions[row]))
            assert cells[2] == f"{kld[row]:.4f}"
        summary = " ".join(shown_lines(screen.query_one("#score-summary", Static)))
        assert f"mean KLD {pair.summary.kld.value:.4f}" in summary
        # d: the largest divergence, then the next largest.
        order = np.argsort(-kld, kind="stable")
        await pilot.press("d")
        assert table.cursor_row == int(order[0])
        await pilot.press("d")
        assert table.cursor_row == int(order[1])
        # t: the next position where the two models' top tokens differ.
        differ = np.flatnonzero(result.divergence.top_test != result.divergence.top_base)
        await pilot.press("t")
        later = [int(r) for r in differ if r > int(order[1])]
        assert table.cursor_row == (later[0] if later else int(differ[0]))
        await pilot.pause()
        row = table.cursor_row
        detail = screen.query_one("#score-detail", Static)
        table_shown = kld_view.candidates_table(pair, row).renderables[1]
        assert isinstance(table_shown, Table)
        headers = [str(column.header) for column in table_shown.columns]
        assert headers == ["base", "p", "", "test", "p"]
        # Each probability stands beside its token: no wide gap at a wide screen.
        console = Console(width=150, record=True)
        console.print(kld_view.candidates_table(pair, row))
        drawn = [line.rstrip() for line in console.export_text().splitlines()]
        assert max(len(gap) for line in drawn for gap in re.findall(r" +", line)) < 12
        assert detail.display and screen.query_one("#score-kld-text", Static).display
        pairs = result.candidates
        assert pairs is not None
        assert pairs.test_ids[row, 0] == result.divergence.top_test[row]
        assert pairs.base_ids[row, 0] == result.divergence.top_base[row]
        assert pairs.test_ids[row, 0] != pairs.base_ids[row, 0]
        coloured = kld_view.coloured_text(pair, row)
        selected = [s for s in coloured.spans if kld_view.SELECTED_STYLE in str(s.style)]
        assert len(selected) == 1
        where = os.environ.get(SCREENSHOT_ENV)
        if where:
            app.save_screenshot(os.path.basename(where), os.path.dirname(where) or ".")


async def test_a_different_vocabulary_is_one_line(llama: LlamaBackend, tmp_path: Path) -> None:
    tiny = write_tiny_llama(tmp_path / "tiny.gguf", spm_vocab(600), seed=3)
    app = SamplescopeApp(llama, cursor_blink=False)
    async with app.run_test(size=(150, 48)) as pilot:
        screen = await scored_screen(pilot, app, tiny)
        await wait_until(pilot, lambda: not screen.scoring, 120)
        await pilot.pause()
        summary = " ".join(shown_lines(screen.query_one("#score-summary", Static)))
        assert "different vocabularies: 49152 tokens against 600" in summary
        assert screen.pair is None


async def test_the_app_and_kld_give_the_same_figures(
    llama: LlamaBackend,
    q4_0_model_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The second model is the test and the app's model the base, as `samplescope kld
    --model SECOND --base APP_MODEL` names them, and both give the same figures to the
    last digit (the same code loads and scores both)."""
    text_file = tmp_path / "text.txt"
    text_file.write_text(TEXT, encoding="utf-8")
    args = ["kld", str(text_file), "--model", str(q4_0_model_path)]
    args += ["--base", str(llama.runtime.path), "--threads", "1", "--json"]
    assert main(args) == 0
    cli = json.loads(capsys.readouterr().out)
    app = SamplescopeApp(llama, cursor_blink=False)
    async with app.run_test(size=(80, 30)) as pilot:
        screen = await scored_screen(pilot, app, q4_0_model_path)
        await wait_until(pilot, lambda: screen.pair is not None, 180)
        pair = screen.pair
        assert pair is not None and pair.summary is not None
        assert (pair.test_name, pair.base_name) == (q4_0_model_path.name, llama.runtime.path.name)
        s = pair.summary
        assert (s.kld.value, s.ppl_test.value, s.ppl_base.value, s.same_top.value) == (
            cli["mean_kld"],
            cli["ppl_test"],
            cli["ppl_base"],
            cli["same_top_p"],
        )
        assert {role: w.kernels for role, w in pair.weights.items()} == cli["weights"]
        d = pair.result.divergence
        for i, token in enumerate(cli["tokens"]):
            assert int(pair.result.positions[i]) == token["position"]
            assert float(d.kld[i]) == token["kld"]
            assert float(d.kld_reverse[i]) == token["kld_reverse"]
            assert float(d.p_base[i]) == token["p_base"]
            assert float(d.p_test[i]) == token["p_test"]
            assert (int(d.top_base[i]), int(d.top_test[i])) == (
                token["top_base"],
                token["top_test"],
            )
        # At 80 columns the summary wraps between its phrases, never inside one.
        await pilot.pause()
        lines = shown_lines(screen.query_one("#score-summary", Static))
        phrases = kld_view.summary_text(pair).plain.split(" · ")
        assert f"PPL test {s.ppl_test.value:.2f}" in phrases
        assert 1 < len(lines) < len(phrases)
        for line in lines:
            assert all(part in phrases for part in line.split(" · ")), (line, phrases)


async def test_a_refused_second_model_leaves_no_old_result(
    llama: LlamaBackend, q4_0_model_path: Path, tmp_path: Path
) -> None:
    app = SamplescopeApp(llama, cursor_blink=False)
    async with app.run_test(size=(150, 48)) as pilot:
        screen = await scored_screen(pilot, app, q4_0_model_path)
        await wait_until(pilot, lambda: screen.pair is not None, 180)
        table = screen.query_one(DataTable)
        assert table.row_count > 0
        base_box = screen.query_one("#score-base")
        base_box.value = ""  # type: ignore[attr-defined]
        await pilot.press("ctrl+b", *str(tmp_path / "missing.gguf"), "enter")
        await pilot.pause()
        assert screen.pair is None and screen.base is None
        assert table.row_count == 0
        assert not screen.query_one("#score-kld-text").display
        assert not screen.query_one("#score-detail").display
        summary = shown_lines(screen.query_one("#score-summary", Static))
        assert not any(q4_0_model_path.name in line for line in summary)
