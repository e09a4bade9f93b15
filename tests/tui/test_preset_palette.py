"""Presets from the command palette: a SillyTavern file imported (saved, applied, what
has no counterpart listed) and the live settings exported for other tools."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from textual.widgets import TextArea

from backend.config.llama_server_format import completion_body, flags_text, server_flags
from backend.config.paths import CONFIG_DIR_ENV
from backend.config.presets import load_presets
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, press_at_once, run_command, wait_until
from tui.app import SamplescopeApp
from tui.widgets.entry import ValueEntryScreen
from tui.widgets.text_view import TextViewScreen

pytestmark = pytest.mark.anyio

SIZE = (120, 36)
PRESET = {"temp": 0.6, "top_k": 25, "top_p": 0.8, "min_p": 0.02, "rep_pen_slope": 1}


async def test_a_sillytavern_file_is_imported_saved_and_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "config"))
    preset = tmp_path / "Cool.json"
    preset.write_text(json.dumps(PRESET))
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        await run_command(pilot, app, "import a file")
        assert isinstance(app.screen, ValueEntryScreen)
        await press_at_once(pilot, *str(preset), "enter")
        await pilot.pause()
        live = app.live.current
        assert (live.temperature, live.top_k, live.top_p, live.min_p) == (0.6, 25, 0.8, 0.02)
        saved = load_presets(tmp_path / "config" / "presets.toml")["Cool"]
        assert saved == live
        [message] = [n.message for n in app._notifications]
        assert message.startswith("Imported the sillytavern preset (saved as preset 'Cool' in ")
        assert "No counterpart, not imported: rep_pen_slope = 1" in message

        # again: applied, but a second preset of that name is not saved
        await run_command(pilot, app, "import a file")
        await press_at_once(pilot, *str(preset), "enter")
        await pilot.pause()
        assert "(not saved: " in [n.message for n in app._notifications][-1]
        text = (tmp_path / "config" / "presets.toml").read_text()
        assert list(tomllib.loads(text)) == ["Cool"]


@pytest.mark.parametrize(
    "content", [b"[1, 2", b"\xff\xfe\x00binary\x81", b"[" * 100_000], ids=["json", "binary", "deep"]
)
async def test_a_file_that_is_no_preset_is_reported_and_changes_nothing(
    tmp_path: Path, content: bytes
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        before = app.live.current
        await run_command(pilot, app, "import a file")
        await press_at_once(pilot, *str(bad), "enter")
        await pilot.pause()
        assert app.live.current == before
        [note] = list(app._notifications)
        assert note.severity == "error"
        assert str(bad) in note.message


@pytest.mark.parametrize("form", ["llama-server", "completion-json", "sillytavern"])
async def test_the_live_settings_are_exported_to_the_clipboard(form: str) -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        app.apply_settings(app.live.current.with_changes(temperature=0.55, top_k=7))
        await run_command(pilot, app, f"export as {form}")
        copied = app.clipboard
        if form == "llama-server":
            assert copied == flags_text(server_flags(app.live.current)[0])
            assert "--temp 0.55" in copied and "--top-k 7" in copied
        elif form == "completion-json":
            assert json.loads(copied) == completion_body(app.live.current)[0]
        else:
            assert json.loads(copied)["temp"] == 0.55
            assert json.loads(copied)["top_k"] == 7
        # Shown whole in a box that scrolls, not in a notice that runs off the screen.
        assert not app._notifications
        assert isinstance(app.screen, TextViewScreen)
        assert app.screen.query_one(TextArea).text == copied
        box = app.screen.query_one("#text-view")
        assert box.region.bottom <= SIZE[1] and box.region.right <= SIZE[0]
        await pilot.press("escape")
        assert not isinstance(app.screen, TextViewScreen)


async def test_the_palette_reads_the_presets_once_however_much_is_typed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tui.preset_commands

    reads: list[object] = []
    available = tui.preset_commands.available_presets

    def counted(registry: object) -> object:
        reads.append(registry)
        return available(registry)  # type: ignore[arg-type]

    monkeypatch.setattr(tui.preset_commands, "available_presets", counted)
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await press_at_once(pilot, *"preset: apply")
        await pilot.pause(0.3)
        assert len(reads) == 1
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("ctrl+p")  # a new palette: the presets as they are now
        await press_at_once(pilot, *"pre")
        await pilot.pause(0.3)
        assert len(reads) == 2
