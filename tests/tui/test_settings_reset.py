"""Back to known settings: reset, a preset put on the sliders, the sliders saved as a
preset, from the sampling panel's last group and from the command palette; a new chat
keeps the sliders; the palette lists "Keys" once."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.widgets import Button, Collapsible, OptionList

from backend.config.paths import CONFIG_DIR_ENV
from backend.config.presets import load_presets
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, press_at_once, run_command, wait_until
from tui.app import SamplescopeApp
from tui.resources import shipped_presets
from tui.widgets.entry import ValueEntryScreen
from tui.widgets.preset_picker import PresetPickerScreen

pytestmark = pytest.mark.anyio

SIZE = (120, 36)
START = DEFAULT_CHAT_SETTINGS.with_changes(top_k=20)


@pytest.fixture(autouse=True)
def config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config"
    monkeypatch.setenv(CONFIG_DIR_ENV, str(folder))
    return folder


def make_app() -> SamplescopeApp:
    return SamplescopeApp(FakeBackend(), settings=START, cursor_blink=False)


async def press_panel_button(pilot: object, app: SamplescopeApp, action: str) -> None:
    app.screen.query_one("#group-settings-actions", Collapsible).collapsed = False
    await pilot.pause()  # type: ignore[attr-defined]
    app.screen.query_one(f"#settings-{action}", Button).press()
    await pilot.pause()  # type: ignore[attr-defined]


async def test_a_new_chat_keeps_the_sliders_and_reset_restores_the_start() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        app.apply_setting("temperature", 1.4)
        app.apply_setting("min_p", 0.2)
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert (app.live.current.temperature, app.live.current.min_p) == (1.4, 0.2)
        await press_panel_button(pilot, app, "reset")
        assert app.live.current == START
        app.apply_setting("temperature", 0.3)
        await run_command(pilot, app, "Settings: reset")
        assert app.live.current == START
        slider_values = {c.field: c.value for c in chat_of(app).query("Slider")}  # type: ignore[attr-defined]
        assert slider_values["temperature"] == 0.8 and slider_values["top_k"] == 20


async def test_a_preset_goes_on_the_sliders_from_the_panel_and_the_palette() -> None:
    preset = shipped_presets()["TopP p=0.9 t=0.8"]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        app.apply_setting("seed", 99)
        await press_panel_button(pilot, app, "apply-preset")
        assert isinstance(app.screen, PresetPickerScreen)
        options = app.screen.query_one(OptionList)
        names = list(shipped_presets())
        options.highlighted = names.index("TopP p=0.9 t=0.8")
        await pilot.press("enter")
        await pilot.pause()
        assert app.live.current == preset.with_changes(seed=99)  # the chat's seed stays
        await run_command(pilot, app, "Preset: apply ArgMax")
        assert app.live.current == shipped_presets()["ArgMax"].with_changes(seed=99)


async def test_the_sliders_are_saved_as_a_preset(config_folder: Path) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        app.apply_setting("temperature", 1.1)
        await press_panel_button(pilot, app, "save-preset")
        assert isinstance(app.screen, ValueEntryScreen)
        await press_at_once(pilot, *"warm", "enter")
        await pilot.pause()
        saved = load_presets(config_folder / "presets.toml")["warm"]
        assert saved.temperature == 1.1 and saved.top_k == 20
        assert saved.order == START.order
        await run_command(pilot, app, "Preset: save the sliders as")
        await press_at_once(pilot, *"warm", "enter")
        await pilot.pause()
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert errors and "already holds a preset named 'warm'" in errors[-1]
        # The saved preset is offered at once.
        await run_command(pilot, app, "Preset: apply warm")
        assert app.live.current.temperature == 1.1


async def test_the_palette_lists_keys_once() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert titles.count("Keys") == 1
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
