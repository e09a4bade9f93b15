"""The score screen on the real default model: its table and summary are
`samplescope score`'s figures (`score_text`) for the same text."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static, TextArea

from backend.score.text_score import score_text
from backend.session.llama_backend import LlamaBackend
from tests.helpers import chat_of, wait_until
from tui.app import SamplescopeApp
from tui.score.screen import ScoreScreen, llama_scorer
from tui.score_label import logprob_label

pytestmark = pytest.mark.anyio

TEXT = "The quick brown fox jumps over the lazy dog. It was a sunny day in Paris, 1889."


@pytest.fixture(scope="module")
def llama(default_model_path: Path) -> Iterator[LlamaBackend]:
    """The default model, loaded once for this file."""
    backend = LlamaBackend.load(default_model_path, n_ctx=2048, n_threads=1)
    yield backend
    backend.close()


async def test_the_screen_shows_score_texts_figures(llama: LlamaBackend) -> None:
    expected = score_text(llama, TEXT, stride=(llama.runtime.n_ctx - 1) // 2)
    assert expected.stride == 0  # it fits in one window: the stride is not used
    app = SamplescopeApp(llama, cursor_blink=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        await pilot.press("f8")
        await wait_until(pilot, lambda: isinstance(app.screen, ScoreScreen))
        screen = app.screen
        assert isinstance(screen, ScoreScreen) and screen.scorer is llama_scorer
        screen.query_one(TextArea).load_text(TEXT)
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: screen.score is not None, 120)
        shown = screen.score
        assert shown is not None
        assert [t.token_id for t in shown.tokens] == [t.token_id for t in expected.tokens]
        for got, want in zip(shown.tokens, expected.tokens, strict=True):
            assert got.rank == want.rank
            assert got.logprob == pytest.approx(want.logprob, abs=1e-9)
        table = screen.query_one(DataTable)
        assert table.row_count == len(expected.tokens)
        for row, token in enumerate(expected.tokens):
            cells = [str(c) for c in table.get_row_at(row)]
            if token.logprob is not None:
                assert cells[2] == f"{token.logprob:.3f}"
                assert cells[3] == f"{math.exp(token.logprob):.4f}"
                assert cells[4] == str(token.rank)
        summary = str(screen.query_one("#score-summary", Static).render())
        assert logprob_label(expected.logprob, expected.n_tokens) in summary
        assert f"{len(expected.tokens)} tokens, {expected.n_tokens} scored" in summary
