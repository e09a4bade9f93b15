"""The compare view's curves: each column's entropy or probability, divergences marked."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from tests.helpers import HostApp, wait_done, wait_until
from tests.tui.test_compare_view import FAKE_COLUMNS, SIZE, fake_screen
from tui.compare.curves import CompareCurves, series_values

pytestmark = pytest.mark.anyio

DIVERGES_AT = 8
"""Where FAKE_COLUMNS[2] departs from FAKE_COLUMNS[0] (seed 3, fake backend)."""


def _app() -> HostApp:
    return HostApp(lambda: fake_screen([FAKE_COLUMNS[0], FAKE_COLUMNS[2]]))


async def test_curves_follow_the_columns_and_switch_series() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        curves = screen.query_one(CompareCurves)
        assert not curves.display
        await pilot.press("c")
        await pilot.pause()
        assert curves.display
        views = screen.column_views
        assert [v.divergence for v in views] == [None, DIVERGES_AT]
        assert curves.series == "entropy"
        # The curves are drawn after the next refresh (a pause may end before it).
        await wait_until(pilot, lambda: "entropy" in str(curves.border_title))
        await pilot.press("c")
        await pilot.pause()
        assert curves.series == "prob"
        await wait_until(pilot, lambda: "probability" in str(curves.border_title))
        probs = series_values(views[1].tokens, "prob")
        assert probs.tolist() == [t.step.prob for t in views[1].tokens]
        await pilot.press("c")
        await pilot.pause()
        assert not curves.display


def test_snapshot_two_columns_diverging(snap_compare: Any) -> None:
    app = _app()

    async def run_before(pilot: Pilot[Any]) -> None:
        assert app.compare_screen is not None
        await wait_done(pilot, app.compare_screen)
        await pilot.press("c")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
