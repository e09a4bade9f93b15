"""A sampler plugin in the app: its settings get a panel group and controls, its name
joins the chain-order editor, and its cut is named on the probability panel."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Collapsible

from sampling.settings.registry import Registry
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, wait_until
from tests.registries import with_plugin
from tui.app import SamplescopeApp
from tui.panel.chain_order import ChainOrder
from tui.panel.sampling_panel import SamplingPanel
from tui.panel.slider import Slider
from tui.widgets.prob_cuts import layout_rows, row_label, sampler_label

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def top_h(tmp_path: Path) -> Iterator[Registry]:
    """The built-in registry with the Top-H plugin of docs/plugins.md."""
    page = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    found = re.search(r"```python\n(.*?)```", page, re.DOTALL)
    assert found is not None
    path = tmp_path / "top_h.py"
    path.write_text(found.group(1), encoding="utf-8")
    yield with_plugin(path)


async def test_a_plugins_setting_is_a_slider_in_its_own_group(top_h: Registry) -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False, registry=top_h)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        panel = app.query_one(SamplingPanel)
        group = panel.query_one("#group-top_h", Collapsible)
        assert str(group.title).startswith("Top-H: bounded entropy")
        panel.open_group("top_h")
        await pilot.pause()
        slider = panel.query_one("#slider-top_h", Slider)
        assert slider.label == "top-h" and slider.value == 0.0
        slider.focus()
        await pilot.press("right", "right")
        await pilot.pause()
        assert app.live.current.value("top_h") == pytest.approx(0.02)
        panel.open_group("order")
        assert "top_h" in panel.query_one(ChainOrder).names


def test_a_plugins_cut_is_named_on_the_probability_panel(top_h: Registry) -> None:
    assert sampler_label("top_h", top_h) == "top-h" and row_label("top_h", top_h) == "top-h"
    items = layout_rows([True, False, False], ["", "top_h", "top_h"], "top_h", 1, top_h)
    assert any("✂ top-h" in getattr(item, "text", "") for item in items)
