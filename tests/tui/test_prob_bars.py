"""Each row of the probability panel draws both bars it promises: the probability
before the filters and the one after, over each other, with a legend saying which."""

from __future__ import annotations

import pytest

from tests.helpers import chat_of, wait_until
from tests.tui.test_tui_snapshots import SIZE, TOP_P_SETTINGS, fake_backend, make_app, send
from tui.widgets.prob_panel import BAR_LEGENDS, ProbPanel

pytestmark = pytest.mark.anyio


async def test_each_row_draws_the_bar_before_and_the_bar_after_the_filters() -> None:
    app = make_app(fake_backend(), max_tokens=20, settings=TOP_P_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hello there")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        chat_of(app).flush_now()
        await pilot.pause()
        panel = app.query_one("#probs", ProbPanel)
        step = panel.step
        assert step is not None
        lines = [panel.render_line(y).text for y in range(panel.size.height)]
        assert any(BAR_LEGENDS[0] in line for line in lines)
        rows = [line for line in lines if "%" in line and any(c in line for c in "█▒░")]
        candidates = step.candidates[: len(rows)]
        gained = lost = 0
        for line, candidate in zip(rows, candidates, strict=True):
            both, after_only, before_only = (line.count(c) for c in "█▒░")
            gained += after_only
            lost += before_only
            # Where one bar is longer than the other, only the excess is ▒ or ░.
            assert after_only == 0 or before_only == 0
            assert (after_only > 0) <= (candidate.prob_after > candidate.prob_before)
            assert (before_only > 0) <= (candidate.prob_before > candidate.prob_after)
            assert both + after_only + before_only > 0 or candidate.prob_before < 0.02
        # Top-p renormalises the kept tokens up and takes the rest: both show.
        assert gained > 0 and lost > 0
