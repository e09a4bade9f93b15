"""The compare view's whole flow on the real default model."""

from __future__ import annotations

from typing import Any

import pytest

from backend.chat.compare import first_divergence
from backend.chat.protocol import ChatMessage
from tests.helpers import HostApp, token_ids_of, wait_done
from tui.compare.columns import CompareColumn
from tui.compare.screen import CompareScreen
from tui.widgets.prob_panel import ProbPanel

SIZE = (140, 40)
SEA = [ChatMessage("user", "Write one sentence about the sea.")]


@pytest.mark.anyio
async def test_compare_flow_on_the_real_model(llama_backend: Any) -> None:
    from tui.resources import shipped_presets

    presets = shipped_presets()
    names = ["ArgMax", "All t=1.5", "TopK k=40 t=0.8"]
    columns = [CompareColumn(name, presets[name]) for name in names]
    llama_backend.reset()
    app = HostApp(lambda: CompareScreen(llama_backend, SEA, columns, 1234, max_tokens=16))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        views = screen.column_views
        for view in views:
            assert view.finished is not None and view.finished.reason in ("eos", "max_tokens")
            assert view.tokens and view.token_ids == view.finished.token_ids
        for view in views[1:]:
            ref_finished, finished = views[0].finished, view.finished
            assert ref_finished is not None and finished is not None
            expected = first_divergence(ref_finished.token_ids, finished.token_ids)
            assert view.divergence == expected
            marker = str(view.query_one(".column-marker").render())
            if expected is None:
                assert "same tokens" in marker
            else:
                assert f"diverges at token {expected + 1}" in marker
        # t=1.5 over the whole vocabulary parts from argmax within 16 tokens.
        assert views[1].divergence is not None
        first = token_ids_of(screen)
        texts = [view.text for view in views]

        await pilot.press("r")
        await wait_done(pilot, screen)
        assert token_ids_of(screen) == first
        assert [view.text for view in screen.column_views] == texts

        # The second column's cursor starts where it parts from the first.
        await pilot.press("2", "right")
        await pilot.pause()
        second = screen.column_views[1]
        assert second.divergence is not None and second.cursor == second.divergence
        assert screen.query_one(ProbPanel).step == second.tokens[second.divergence].step
        await pilot.press("p")
        await pilot.pause()
    assert len(app.results) == 1
    result = app.results[0]
    assert result is not None
    assert result.column == 1 and result.label == "All t=1.5"
    assert result.token_ids == first[1]
    assert tuple(t.step.token_id for t in result.tokens) == first[1]
    assert result.text == texts[1]
    assert result.settings == presets["All t=1.5"].with_changes(seed=1234)
