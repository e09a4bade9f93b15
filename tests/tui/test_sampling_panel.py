"""The sampling panel: a control per setting, changes go up as messages, the app decides."""

from __future__ import annotations

from dataclasses import fields

import pytest
from textual.app import App, ComposeResult

from backend.chat.protocol import LiveSettings
from sampling.settings import DEFAULT_CHAT_SETTINGS, SamplerSettings
from sampling.spec import DISPLAY_ORDER
from tests.fake_backend import FakeBackend
from tests.helpers import wait_until
from tui.app import SamplescopeApp
from tui.widgets.sampling_panel import SamplingPanel
from tui.widgets.slider import Slider
from tui.widgets.toggle import Toggle

pytestmark = pytest.mark.anyio


class PanelHost(App[None]):
    """The panel alone, keeping every `SettingChanged` it posts."""

    def __init__(self, live: LiveSettings) -> None:
        super().__init__()
        self.live = live
        self.asked: list[tuple[str, object]] = []

    def compose(self) -> ComposeResult:
        yield SamplingPanel(self.live.current)

    def on_sampling_panel_setting_changed(self, message: SamplingPanel.SettingChanged) -> None:
        self.asked.append((message.field, message.value))


async def test_every_field_has_a_control_showing_its_value() -> None:
    live = LiveSettings(DEFAULT_CHAT_SETTINGS)
    async with PanelHost(live).run_test(size=(60, 20)) as pilot:
        panel = pilot.app.query_one(SamplingPanel)
        controls = list(panel.query(Slider).results()) + list(panel.query(Toggle).results())
        assert sorted(c.field for c in controls) == sorted(f.name for f in fields(SamplerSettings))
        shown = [c.field for c in panel.children if isinstance(c, Slider | Toggle)]
        assert shown == [spec.name for spec in DISPLAY_ORDER]
        for spec in DISPLAY_ORDER:
            control: Slider | Toggle
            if spec.is_number:
                control = panel.query_one(f"#slider-{spec.name}", Slider)
            else:
                control = panel.query_one(f"#toggle-{spec.name}", Toggle)
            assert control.value == getattr(DEFAULT_CHAT_SETTINGS, spec.name)
            assert control.label == spec.label


async def test_the_panel_asks_and_never_writes_the_settings() -> None:
    live = LiveSettings(DEFAULT_CHAT_SETTINGS)
    host = PanelHost(live)
    async with host.run_test(size=(60, 20)) as pilot:
        panel = host.query_one(SamplingPanel)
        panel.query_one("#slider-frequency_penalty", Slider).focus()
        await pilot.press("right")
        panel.query_one("#toggle-rng", Toggle).focus()
        await pilot.press("enter")
        panel.query_one("#slider-presence_penalty", Slider).focus()
        await pilot.press("enter", *"-1.5", "enter")
        await pilot.pause()
        assert host.asked == [
            ("frequency_penalty", 0.01),
            ("rng", "xorshift128"),
            ("presence_penalty", -1.5),
        ]
        assert live.current is DEFAULT_CHAT_SETTINGS
        panel.show(DEFAULT_CHAT_SETTINGS.with_changes(presence_penalty=0.5, rng="pcg64"))
        assert panel.query_one("#slider-presence_penalty", Slider).value == 0.5
        assert panel.query_one("#toggle-rng", Toggle).value == "pcg64"


async def test_the_app_makes_new_controls_live_and_refuses_bad_values() -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: app.ready)
        app.query_one("#toggle-rng", Toggle).focus()
        await pilot.press("enter")
        # The change travels as a message: wait for the app to handle it.
        await wait_until(pilot, lambda: app.live.current.rng == "xorshift128")
        app.query_one("#slider-frequency_penalty", Slider).focus()
        await pilot.press("shift+right")
        await wait_until(pilot, lambda: app.live.current.frequency_penalty > 0)
        assert app.live.current.frequency_penalty == pytest.approx(0.1)
        await pilot.press("enter", *"nan", "enter")  # not a finite number: refused, kept
        await pilot.pause()
        assert app.live.current.frequency_penalty == pytest.approx(0.1)
        slider = app.query_one("#slider-frequency_penalty", Slider)
        assert slider.value == pytest.approx(0.1)
        assert app._apply("presence_penalty", 0.25) is True
        assert app.query_one("#slider-presence_penalty", Slider).value == 0.25
        assert app._apply("repeat_last_n", -3) is False
        assert app.live.current.repeat_last_n == DEFAULT_CHAT_SETTINGS.repeat_last_n


async def test_at_80x24_the_panel_scrolls_and_each_focused_control_is_visible() -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.ready)
        panel = app.query_one(SamplingPanel)
        probs = app.query_one("#probs")
        assert panel.region.height <= probs.region.height + 1  # at most half the column
        app.action_focus_sampling()
        for spec in DISPLAY_ORDER:
            await pilot.pause()
            focused = app.focused
            assert focused is not None and getattr(focused, "field", None) == spec.name
            assert panel.content_region.contains_region(focused.region)
            await pilot.press("tab")
