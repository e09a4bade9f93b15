"""The score screen with a second model, on the real default model against a Q4_0 copy
of it: each token's KLD in the table and the coloured text, the jumps, both models'
candidates for the selected token."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from textual.widgets import DataTable, Static, TextArea

from backend.session.llama_backend import LlamaBackend
from tests.helpers import chat_of, wait_until
from tests.tiny_models import spm_vocab, write_tiny_llama
from tui.app import SamplescopeApp
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
        summary = str(screen.query_one("#score-summary", Static).render())
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
        table_shown = kld_view.candidates_table(pair, row)
        assert str(table_shown.columns[0].header).startswith("base: ")
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
        summary = str(screen.query_one("#score-summary", Static).render())
        assert "different vocabularies: 49152 tokens against 600" in summary
        assert screen.pair is None
