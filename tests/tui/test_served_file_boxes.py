"""Every box of the app that names a file goes through the one path guard when the app
is served (`backend.config.paths.user_file`): a file outside samplescope's own
folders is never opened, and the notice is the same whether it exists or not (no
existence oracle, none of its bytes shown).

The boxes are enumerated from the source: every `Input` the app builds, and every use
of the two widgets that wrap one for their callers (`ValueEntryScreen`,
`TextSetting`), must be listed below as naming a file or not. A new box fails
`test_every_box_is_known` until it is listed, and one that names a file needs a
driver here that types into it as a user would.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from backend.config import paths
from sampling.built_in import BUILT_IN_REGISTRY
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, served_folders, wait_until
from tui.app import SamplescopeApp
from tui.models.picker import ModelPickerScreen
from tui.panel.sampling_panel import SamplingPanel
from tui.panel.text_setting import TextSetting
from tui.preset_commands import ask_preset_file
from tui.score.screen import ScoreScreen

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
BOX_CALLS = ("Input", "ValueEntryScreen", "TextSetting")
"""Textual's one-line box, and the app's two widgets that wrap one for their callers."""

Box = tuple[str, str, str]
"""(module, the call, its id or first argument as written)."""

TEXT_SETTINGS_BOX: Box = ("tui/panel/setting_controls.py", "TextSetting", "spec.name")
"""The box of every typed setting: its driver types into each (make test runs it)."""


FILE_BOXES: dict[Box, str] = {
    ("tui/score/screen.py", "Input", "'score-path'"): "score: a text file to open (ctrl+o)",
    ("tui/score/screen.py", "Input", "'score-base'"): "score: a second model (ctrl+b)",
    TEXT_SETTINGS_BOX: "a several-valued setting: a grammar or a JSON schema may be @PATH",
    ("tui/preset_commands.py", "ValueEntryScreen", "'the preset file to import'"): (
        "Preset: import a file"
    ),
    ("tui/models/picker.py", "Input", "'model-filter'"): "the model picker: a GGUF's path",
}
OTHER_BOXES: dict[Box, str] = {
    ("tui/chat/view.py", "Input", "'prompt'"): "the message to send",
    ("tui/history/screen.py", "Input", "'history-search'"): "search in saved chats",
    ("tui/compare/edit.py", "Input", "'edit-seed'"): "compare: the seed",
    ("tui/compare/edit.py", "Input", "f'edit-value-{i}'"): "compare: a value (never @PATH)",
    ("tui/panel/phrase_bans.py", "TextSetting", "BANS_FIELD"): "the banned phrases",
    ("tui/chat/transcript.py", "ValueEntryScreen", "'surprising tokens'"): "a threshold",
    ("tui/panel/slider.py", "ValueEntryScreen", "self.label"): "a slider's value",
    ("tui/preset_commands.py", "ValueEntryScreen", "'the new preset's name'"): (
        "a preset's name (a key in presets.toml, never a path)"
    ),
    # The wrappers' own boxes: their callers are listed above.
    ("tui/widgets/entry.py", "Input", "'entry-input'"): "ValueEntryScreen's box",
    ("tui/panel/text_setting.py", "Input", "f'input-{field}'"): "TextSetting's box",
}


def boxes_in_source() -> set[Box]:
    """Every construction of a box in the app's source."""
    found: set[Box] = set()
    for path in sorted((ROOT / "tui").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if name not in BOX_CALLS:
                continue
            ids = [ast.unparse(k.value) for k in node.keywords if k.arg == "id"]
            first = ast.unparse(node.args[0]) if node.args else "<none>"
            naming = ids[0] if name == "Input" and ids else first
            found.add((path.relative_to(ROOT).as_posix(), name, naming.replace('"', "'")))
    return found


def test_every_box_is_known() -> None:
    unknown = boxes_in_source() - FILE_BOXES.keys() - OTHER_BOXES.keys()
    gone = (FILE_BOXES.keys() | OTHER_BOXES.keys()) - boxes_in_source()
    assert not unknown, (
        f"new boxes: list each in FILE_BOXES (with a driver) or OTHER_BOXES: {unknown}"
    )
    assert not gone, f"listed boxes no longer in the source: {gone}"


def test_no_class_of_the_app_wraps_a_box_unlisted() -> None:
    """A subclass of a box would be a box by another name: none is hidden."""
    for path in (ROOT / "tui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(base) for base in node.bases}
                assert not bases & {"Input", "ValueEntryScreen", "TextSetting"}, (path, node.name)


OPENED: list[str] = []
"""Every path this process opened since the test began (an audit hook adds to it)."""


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and args and isinstance(args[0], str | os.PathLike):
        OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)

Driver = Callable[[Pilot[None], SamplescopeApp, str], Awaitable[None]]


async def _score_screen(pilot: Pilot[None], app: SamplescopeApp) -> ScoreScreen:
    if not isinstance(app.screen, ScoreScreen):
        await pilot.press("f8")
        await wait_until(pilot, lambda: isinstance(app.focused, TextArea))
    screen = app.screen
    assert isinstance(screen, ScoreScreen)
    return screen


async def _type_into(pilot: Pilot[None], box: Input, text: str) -> None:
    box.focus()
    box.value = text
    await pilot.press("enter")
    await pilot.pause()


async def score_path(pilot: Pilot[None], app: SamplescopeApp, path: str) -> None:
    screen = await _score_screen(pilot, app)
    await pilot.press("ctrl+o")
    await _type_into(pilot, screen.query_one("#score-path", Input), path)


async def score_base(pilot: Pilot[None], app: SamplescopeApp, path: str) -> None:
    """The second model's box, then ctrl+s: a base that got through is opened (by a
    stand-in that reads its first bytes, as the GGUF reader would)."""
    from backend.score.text_score import ScoreError

    screen = await _score_screen(pilot, app)

    def alone(backend: object, text: str) -> None:
        raise ScoreError("scored alone")

    def opens_base(backend: object, base: Path, text: str) -> None:
        base.open("rb").close()
        raise ScoreError("scored against the base")

    screen.scorer = alone  # type: ignore[assignment]
    screen.pair_scorer = opens_base  # type: ignore[assignment]
    screen.base = None
    await pilot.press("ctrl+b")
    await _type_into(pilot, screen.query_one("#score-base", Input), path)
    screen.query_one(TextArea).load_text("a text")
    await pilot.press("ctrl+s")
    await wait_until(pilot, lambda: not screen.scoring)


async def text_settings(pilot: Pilot[None], app: SamplescopeApp, path: str) -> None:
    """Every typed setting of the panel (each a `TextSetting` of setting_controls)."""
    panel = app.query_one(SamplingPanel)
    for group in {spec.group for spec in BUILT_IN_REGISTRY.settings_by_name.values()}:
        panel.open_group(group)
    await pilot.pause()
    fields = {spec.name for spec in BUILT_IN_REGISTRY.settings_by_name.values()}
    settings = [s for s in app.query(TextSetting) if s.field in fields]
    assert {s.field for s in settings} >= {"grammar", "json_schema"}
    for setting in settings:
        await _type_into(pilot, setting.query_one(Input), f"@{path}")


async def preset_file(pilot: Pilot[None], app: SamplescopeApp, path: str) -> None:
    ask_preset_file(app)
    await wait_until(pilot, lambda: bool(app.screen.query("#entry-input")))
    await _type_into(pilot, app.screen.query_one("#entry-input", Input), path)


async def model_path(pilot: Pilot[None], app: SamplescopeApp, path: str) -> None:
    """The picker's box (f7): a typed path, Tab (completion), then Enter opens it."""
    if not isinstance(app.screen, ModelPickerScreen):
        await pilot.press("f7")
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPickerScreen))
    box = app.screen.query_one("#model-filter", Input)
    box.focus()
    box.value = path
    await pilot.press("tab")
    assert box.value == path or not paths.own_folders_only()  # nothing listed outside
    await pilot.press("enter")
    await pilot.pause()


DRIVERS: dict[Box, Driver] = {
    ("tui/score/screen.py", "Input", "'score-path'"): score_path,
    ("tui/score/screen.py", "Input", "'score-base'"): score_base,
    TEXT_SETTINGS_BOX: text_settings,
    ("tui/preset_commands.py", "ValueEntryScreen", "'the preset file to import'"): preset_file,
    ("tui/models/picker.py", "Input", "'model-filter'"): model_path,
}


def test_every_box_naming_a_file_has_a_driver() -> None:
    assert DRIVERS.keys() == FILE_BOXES.keys()


@pytest.mark.parametrize(
    "box",
    [
        pytest.param(box, id=title, marks=[pytest.mark.slow] if box == TEXT_SETTINGS_BOX else [])
        for box, title in FILE_BOXES.items()
    ],
)
async def test_the_served_app_opens_nothing_outside_its_folders_and_tells_nothing(
    box: Box, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = served_folders(tmp_path, monkeypatch)
    secret = tmp_path / "secret.gguf"
    secret.write_bytes(b"TOPS secret: hunter2\n")
    missing = tmp_path / "missing.gguf"
    (own / "link.gguf").symlink_to(secret)
    inside = own / "inside.txt"
    inside.write_text("# a file of samplescope's own folder\n", encoding="utf-8")
    notes: list[str] = []
    app = SamplescopeApp(
        FakeBackend(),
        cursor_blink=False,
        list_models=list,
        open_model=lambda path: FakeBackend(),
    )
    app.notify = lambda message, **_: notes.append(str(message))  # type: ignore[method-assign]
    drive = DRIVERS[box]
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        told: dict[str, list[str]] = {}
        for outside in (secret, missing, own / "link.gguf"):
            notes.clear()
            OPENED.clear()
            await drive(pilot, app, str(outside))
            assert str(secret) not in OPENED and str(missing) not in OPENED
            assert notes and all("hunter2" not in note and "TOPS" not in note for note in notes)
            assert any("the served app opens files only in" in note for note in notes), notes
            told[str(outside)] = [note.replace(str(outside), "PATH") for note in notes]
        assert told[str(secret)] == told[str(missing)]  # no telling whether it exists
        OPENED.clear()
        await drive(pilot, app, str(inside))  # inside the folders: the box opens it
        assert str(inside) in OPENED
