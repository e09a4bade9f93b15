"""The sampling panel: a control per setting, changes go up as messages, the app decides."""

from __future__ import annotations

import math

import pytest
from textual.app import App, ComposeResult
from textual.widget import Widget
from textual.widgets import Collapsible, Input

from backend.chat.protocol import LiveSettings
from sampling.built_in import BUILT_IN_REGISTRY, DEFAULT_CHAT_SETTINGS
from tests.fake_backend import FAKE_VOCAB, FakeBackend
from tests.helpers import chat_of, press_at_once, wait_until
from tui.app import SamplescopeApp
from tui.panel.sampling_panel import SamplingPanel
from tui.panel.setting_controls import group_specs
from tui.panel.slider import Slider
from tui.panel.toggle import Toggle

pytestmark = pytest.mark.anyio


def _field_of(widget: Widget) -> str | None:
    """The setting a focused widget belongs to (None: a group's title)."""
    for node in widget.ancestors_with_self:
        field = getattr(node, "field", None)
        if isinstance(field, str):
            return field
    return None


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
        for name, _ in group_specs():
            panel.open_group(name)
        controls = {c.field: c for c in panel.controls()}
        assert sorted(controls) == sorted(spec.name for spec in BUILT_IN_REGISTRY.settings)
        shown = [c.field for c in panel.controls()]
        assert shown == [spec.name for _, specs in group_specs() for spec in specs]
        for spec in BUILT_IN_REGISTRY.display_order:
            control = controls[spec.name]
            if spec.is_number:
                assert isinstance(control, Slider)
            elif spec.kind in ("bool", "choice"):
                assert isinstance(control, Toggle)
            if isinstance(control, Slider | Toggle):
                assert control.value == getattr(DEFAULT_CHAT_SETTINGS, spec.name)
            assert control.label == spec.label


async def test_groups_follow_the_spec_and_only_the_core_group_starts_open() -> None:
    live = LiveSettings(DEFAULT_CHAT_SETTINGS)
    async with PanelHost(live).run_test(size=(60, 20)) as pilot:
        panel = pilot.app.query_one(SamplingPanel)
        groups = list(panel.query(Collapsible).results())
        # The sampler settings' groups, then phrase bans, loops, beam search (no
        # settings), then reset and presets.
        specs = [f"group-{name}" for name, _ in group_specs()]
        assert [g.id for g in groups] == [
            *specs,
            "group-phrase-bans",
            "group-loops",
            "group-beam-search",
            "group-settings-actions",
        ]
        assert [g.collapsed for g in groups] == [g.id != "group-core" for g in groups]
        for name, specs in group_specs():
            panel.open_group(name)
            group = panel.query_one(f"#group-{name}", Collapsible)
            inside = [c.field for c in group.query("Slider, Toggle, ChainOrder, TextSetting")]  # type: ignore[attr-defined]
            assert inside == [spec.name for spec in specs]


async def test_a_closed_group_builds_its_controls_when_it_opens_with_the_values_in_force() -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        panel = app.query_one(SamplingPanel)
        dry = panel.query_one("#group-dry", Collapsible)
        assert dry.collapsed and not dry.query("Slider, Toggle, ChainOrder, TextSetting")
        assert "dry_multiplier" not in [c.field for c in panel.controls()]
        preset = app.live.current.with_changes(dry_multiplier=0.8, dry_sequence_breakers=("##",))
        app.apply_settings(preset)  # while the group is closed
        await pilot.pause()
        assert "●" in str(dry.title)  # the title follows the settings, not the controls
        assert not dry.query("Slider, Toggle, ChainOrder, TextSetting")
        dry.query_one("CollapsibleTitle").focus()
        await pilot.press("enter")  # opens the group as a user would
        await pilot.pause()
        assert not dry.collapsed
        inside = [c.field for c in dry.query("Slider, Toggle, ChainOrder, TextSetting")]  # type: ignore[attr-defined]
        assert inside == [
            spec.name for name, specs in group_specs() if name == "dry" for spec in specs
        ]
        assert panel.query_one("#slider-dry_multiplier", Slider).value == 0.8
        assert app.query_one("#input-dry_sequence_breakers", Input).value == '["##"]'
        panel.query_one("#slider-dry_multiplier", Slider).focus()
        await pilot.press("right")  # the new controls are live
        await wait_until(pilot, lambda: app.live.current.dry_multiplier != 0.8)
        assert (
            panel.query_one("#slider-dry_multiplier", Slider).value
            == app.live.current.dry_multiplier
        )
        dry.collapsed = True
        dry.collapsed = False  # opened again: the same controls, not a second set
        await pilot.pause()
        assert len(dry.query(Slider)) == 4


async def test_the_panel_asks_and_never_writes_the_settings() -> None:
    live = LiveSettings(DEFAULT_CHAT_SETTINGS)
    host = PanelHost(live)
    async with host.run_test(size=(60, 20)) as pilot:
        panel = host.query_one(SamplingPanel)
        panel.open_group("penalties")
        await pilot.pause()
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
        await wait_until(pilot, lambda: chat_of(app).ready)
        panel = app.query_one(SamplingPanel)
        panel.open_group("penalties")
        await pilot.pause()
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
        assert app.apply_setting("presence_penalty", 0.25) is True
        assert app.query_one("#slider-presence_penalty", Slider).value == 0.25
        assert app.apply_setting("repeat_last_n", -3) is False
        assert app.live.current.repeat_last_n == DEFAULT_CHAT_SETTINGS.repeat_last_n


def _shown_in(panel: SamplingPanel, focused: Widget | None) -> bool:
    """Whether `focused` is a control of `panel` inside its visible region."""
    if focused is None or panel not in focused.ancestors_with_self:
        return False
    return panel.content_region.contains_region(focused.region)


@pytest.mark.slow
async def test_at_80x24_the_panel_scrolls_and_each_focused_control_is_visible() -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        panel = app.query_one(SamplingPanel)
        probs = app.query_one("#probs")
        assert panel.region.height <= probs.region.height + 1  # at most half the column
        for name, _ in group_specs():
            panel.open_group(name)
        await pilot.pause()  # each group opened scrolls itself into view once laid out
        app.chat_screen.action_focus_sampling()
        # the control vectors' group is hidden: the fake model has no control vector
        order = [
            spec.name
            for name, specs in group_specs()
            if panel.query_one(f"#group-{name}").display
            for spec in specs
        ]
        assert "control_strength" not in order
        seen: list[str] = []
        previous = None
        while len(seen) < len(order):
            # Wait for the tab to move the focus and the control to be scrolled into
            # view (on a loaded machine Pilot's pause can end before either happened).
            await wait_until(
                pilot,
                lambda before=previous: app.focused is not before and _shown_in(panel, app.focused),
                timeout=10,
            )
            focused = previous = app.focused
            assert focused is not None
            field = _field_of(focused)
            if field is not None and field not in seen:
                seen.append(field)
            await pilot.press("tab")
        assert seen == order


async def test_text_settings_are_read_by_the_app_with_the_models_tokenizer() -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        panel = app.query_one(SamplingPanel)
        panel.open_group("bias")
        panel.open_group("dry")
        await pilot.pause()
        bias = app.query_one("#input-logit_bias", Input)
        bias.focus()
        await press_at_once(pilot, *" cat=-inf; 42=+2", "enter")
        await pilot.pause()
        assert app.live.current.logit_bias == ((FAKE_VOCAB.index(" cat"), -math.inf), (42, 2.0))
        assert bias.value == "3=-inf;42=+2"
        bias.value = ""
        await press_at_once(pilot, *"no such words=-1", "enter")  # not one token: refused, kept
        await pilot.pause()
        assert app.live.current.logit_bias == ((3, -math.inf), (42, 2.0))
        assert bias.value == "3=-inf;42=+2"
        breakers = app.query_one("#input-dry_sequence_breakers", Input)
        breakers.focus()
        breakers.value = ""
        await press_at_once(pilot, *'["\\n", "##"]', "enter")
        await pilot.pause()
        assert app.live.current.dry_sequence_breakers == ("\n", "##")
