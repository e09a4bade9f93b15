"""The sampling panel's control-vector group (the `control_strength` slider) shows only
while the model has a control vector: without one the strength changes nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.widgets import Collapsible

from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, wait_until
from tui.app import SamplescopeApp
from tui.panel.sampling_panel import SamplingPanel
from tui.panel.slider import Slider

pytestmark = pytest.mark.anyio


def steered() -> FakeBackend:
    """A fake model that says it was loaded with a control vector."""
    backend = FakeBackend()
    backend._info = replace(backend.info, control_vectors=(("/vectors/happy.gguf", 2.0),))
    return backend


async def test_without_a_control_vector_the_group_is_hidden() -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        panel = app.query_one(SamplingPanel)
        group = panel.query_one("#group-control", Collapsible)
        assert not group.display


async def test_with_a_control_vector_the_group_shows_and_its_slider_moves() -> None:
    app = SamplescopeApp(steered(), cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        panel = app.query_one(SamplingPanel)
        assert panel.query_one("#group-control", Collapsible).display
        panel.open_group("control")
        slider = panel.query_one("#slider-control_strength", Slider)
        await wait_until(pilot, lambda: slider.region.height > 0)
        slider.focus()
        await pilot.press("shift+right")
        await wait_until(pilot, lambda: app.live.current.value("control_strength") == 1.5)
