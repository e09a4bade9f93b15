"""Helpers shared by the test files: fake clocks, sending a message and waiting on the
app, a compare host, paths that are no regular file, sampler plug-in sources."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.render import measure
from textual.widgets import Collapsible, DataTable, Input

from backend.chat.events import FinishedEvent
from backend.session.sweep_result import SweepResult
from tui.app import SamplescopeApp
from tui.chat.view import ChatView
from tui.compare.result import CompareResult
from tui.compare.screen import CompareScreen


def chat_of(app: SamplescopeApp) -> ChatView:
    """The chat view, queried on the chat's screen (whatever screen is on top of it)."""
    return app.chat_screen.query_one(ChatView)


class StepClock:
    """A clock that advances a fixed amount per call: figures on screen stay fixed."""

    def __init__(self, step: float = 0.01) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def wait_until(
    pilot: Pilot[Any], condition: Callable[[], bool], timeout: float = 60.0
) -> None:
    """Let the app run until `condition()` holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for the app")
        await asyncio.sleep(0.005)  # a plain sleep: the app runs meanwhile


def table_measured(table: DataTable[Any]) -> bool:
    """Whether `table` has laid out every row it holds.

    A DataTable measures the rows added since it was last idle (column widths, its
    scrollable height) only once its message queue empties; before that it draws them
    in columns as wide as the labels. A snapshot waits for this, not for a pause (which
    ends early on a loaded machine)."""
    header = table.header_height if table.show_header else 0
    rows = sum(row.height for row in table.rows.values())
    return table.virtual_size.height == header + rows


def columns_fit(table: DataTable[Any]) -> bool:
    """Whether each of `table`'s columns is drawn now as wide as its label and widest cell.

    Checked right after a fill, before the table is idle (when it would measure the rows
    it was given itself): a column narrower than a cell draws that cell cut."""
    console = table.app.console
    for index, column in enumerate(table.ordered_columns):
        drawn = column.get_render_width(table) - 2 * table.cell_padding
        cells = [column.label, *table.get_column_at(index)]
        if any(measure(console, cell, 1) > drawn for cell in cells):
            return False
    return True


class DateClock:
    """A wall clock for the store that advances `step` per reading, from `start`."""

    def __init__(
        self,
        start: datetime = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        step: timedelta = timedelta(minutes=1),
    ) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


async def copied_in_sweep_screen(result: SweepResult, *keys: str) -> list[str]:
    """What pressing `keys` copies in a sweep screen showing `result` (alone in an app)."""
    from tui.sweep.screen import SweepScreen

    copied: list[str] = []

    class Viewer(App[None]):
        def on_mount(self) -> None:
            self.push_screen(SweepScreen(result))

    app = Viewer()
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
    async with app.run_test(size=(110, 34)) as pilot:
        await pilot.press(*keys)
        await pilot.pause()
    return copied


def served_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Open files as a served app does (only in samplescope's folders), with the data
    folder `tmp_path/data` (made) and the config folder `tmp_path/config`; the data
    folder."""
    from backend.config import paths

    own = tmp_path / "data"
    own.mkdir(exist_ok=True)
    monkeypatch.setenv("SAMPLESCOPE_DATA_DIR", str(own))
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setattr(paths, "_OWN_FOLDERS_ONLY", True)
    return own


async def press_at_once(pilot: Pilot[Any], *keys: str) -> None:
    """Press `keys` as one burst, as a terminal delivers keys typed ahead or a held
    key's repeats: every key is queued before the app handles the first, in order, and
    the app is waited on (to look idle) once at the end.

    `Pilot.press` waits for the app to look idle after every key (at least two of
    Textual's 20 ms windows a key); for a test about where many keys end up, not about
    what each one drew, that wait is most of its time.
    """
    import textual.app

    async def no_wait(min_sleep: float = 0.0, max_sleep: float = 1.0) -> None:
        del min_sleep, max_sleep
        await asyncio.sleep(0)

    waiting = textual.app.wait_for_idle  # type: ignore[attr-defined]  # _press_keys awaits it
    textual.app.wait_for_idle = no_wait  # type: ignore[attr-defined]
    try:
        await pilot.app._press_keys(keys)
    finally:
        textual.app.wait_for_idle = waiting  # type: ignore[attr-defined]
    await pilot.pause()


async def run_command(pilot: Pilot[Any], app: App[Any], title: str) -> None:
    """Type `title` into the command palette and run the command it lists first, once
    that command is the one named (case aside)."""
    from textual.command import CommandList, CommandPalette

    await pilot.press("ctrl+p")
    await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette))
    await press_at_once(pilot, *title)

    def found() -> bool:
        results = app.screen.query_one(CommandList)
        return (
            results.option_count > 0
            and title.lower() in str(results.get_option_at_index(0).prompt).lower()
        )

    await wait_until(pilot, found)
    await pilot.press("enter")
    await wait_until(pilot, lambda: not isinstance(app.screen, CommandPalette))


async def type_message(pilot: Pilot[Any], app: SamplescopeApp, text: str) -> None:
    """Type `text` into the message box key by key and send it (do not wait for the reply).

    Enter goes through the input's action, not `Pilot.press`: that waits for the app
    to go idle, i.e. (with tokens streaming in) for the end of the reply.
    """
    await wait_until(pilot, lambda: chat_of(app).ready)
    prompt = app.query_one("#prompt", Input)
    prompt.focus()
    await pilot.press(*text)
    await prompt.action_submit()


async def nth_reply_finished(
    pilot: Pilot[Any], app: SamplescopeApp, count: int = 1
) -> FinishedEvent:
    """Wait until the app has finished `count` replies in all; the `count`-th one's end."""
    await wait_until(
        pilot,
        lambda: len(chat_of(app).conversation.finished) >= count and not chat_of(app).generating,
        240,
    )
    return chat_of(app).conversation.finished[count - 1]


async def send_message(pilot: Pilot[Any], app: SamplescopeApp, text: str) -> FinishedEvent:
    """Send `text` as one paste and wait for the reply to it; its end."""
    await wait_until(pilot, lambda: chat_of(app).ready)
    count = len(chat_of(app).conversation.finished)
    prompt = app.query_one("#prompt", Input)
    prompt.focus()
    prompt.value = text
    await prompt.action_submit()
    return await nth_reply_finished(pilot, app, count + 1)


async def reopen_chat(pilot: Pilot[Any], app: SamplescopeApp) -> None:
    """Start a new chat, then open the most recent saved one again (ctrl+o, enter)."""
    from tui.history.screen import HistoryScreen

    await pilot.press("ctrl+n")
    await pilot.press("ctrl+o")
    await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen))
    await pilot.press("enter")
    await wait_until(pilot, lambda: not isinstance(app.screen, HistoryScreen))


class HostApp(App[None]):
    """Opens one compare screen and keeps its result."""

    def __init__(self, make_screen: Callable[[], CompareScreen]) -> None:
        super().__init__()
        self._make_screen = make_screen
        self.results: list[CompareResult | None] = []
        self.compare_screen: CompareScreen | None = None

    def on_mount(self) -> None:
        self.compare_screen = self._make_screen()
        self.push_screen(self.compare_screen, self.results.append)


async def wait_done(pilot: Pilot[Any], screen: CompareScreen, timeout: float = 120.0) -> None:
    """Wait until the screen's run has ended and its messages are handled."""
    for _ in range(int(timeout / 0.05)):
        if screen.is_mounted and screen.done:
            break
        await pilot.pause(0.05)
    assert screen.done, "the comparison did not finish in time"
    await pilot.pause()


def token_ids_of(screen: CompareScreen) -> list[tuple[int, ...]]:
    return [view.token_ids for view in screen.column_views]


def last_chunk(prefilled: int, n_batch: int) -> int:
    """How many tokens running a cached prompt again recomputes: its last prefill chunk.

    Args:
        prefilled: How many tokens the prompt's own prefill computed (in n_batch chunks).
        n_batch: The chunk size.
    """
    return prefilled - (prefilled - 1) // n_batch * n_batch


SPECIAL_FILE_KINDS = ("fifo", "directory", "device")


def special_file(path: Path, kind: str) -> Path:
    """A path that is no regular file, of one of `SPECIAL_FILE_KINDS`.

    A FIFO (nobody writes to it: a read would wait for ever) or a directory is made at
    `path`; a device is /dev/zero (a read would never end).
    """
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "device":
        return Path("/dev/zero")
    else:
        raise ValueError(f"no special file of kind {kind!r}")
    return path


ROOT = Path(__file__).resolve().parents[1]


def readme_plugin() -> str:
    """The first Python block of docs/plugins.md ("Your own sampler")."""
    page = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    found = re.search(r"```python\n(.*?)```", page, re.DOTALL)
    assert found is not None
    return found.group(1)


def write_plugin(tmp_path: Path, name: str, apply_body: str) -> Path:
    """A plugin file whose unit `name` applies `apply_body` (at 8 spaces)."""
    path = tmp_path / f"{name}.py"
    path.write_text(
        f'''
from dataclasses import dataclass

import numpy as np

from sampling.plugins import Stateless


@dataclass(frozen=True)
class Broken(Stateless):
    name = "{name}"
    kind = "candidates"
    in_order = True
    specs = ()
    group_titles = {{}}
    label = "{name}"
    row_label = "{name}"

    @classmethod
    def from_settings(cls, settings):
        return cls()

    def apply(self, candidates):
{apply_body}


SAMPLER = Broken
''',
        encoding="utf-8",
    )
    return path


def write_bonus_plugin(tmp_path: Path, name: str, variations: tuple[float, ...] = ()) -> Path:
    """A plugin file whose logits unit `name` adds its one float setting `name` (0 to 1,
    off at 0, compare's `variations` if any) to token 0's logit."""
    path = tmp_path / f"{name}.py"
    varied = f"\n            variations={variations!r}," if variations else ""
    path.write_text(
        f'''
from dataclasses import dataclass

from sampling.plugins import SettingSpec, SliderRange, Stateless


@dataclass(frozen=True)
class Bonus(Stateless):
    name = "{name}"
    kind = "logits"
    specs = (
        SettingSpec(
            "{name}",
            "float",
            default=0.0,
            off=0.0,
            group="{name}",
            label="{name}",
            help="add to token 0's logit",
            slider=SliderRange(0.0, 1.0, hard_min=0.0, hard_max=1.0, fine=0.1, coarse=0.5),{varied}
        ),
    )
    group_titles = {{"{name}": "{name}"}}
    label = "{name}"
    row_label = "{name}"
    amount: float

    @classmethod
    def from_settings(cls, settings):
        amount = settings.value("{name}")
        return cls(amount) if amount > 0.0 else None

    def apply(self, candidates):
        logits = candidates.logits.copy()
        logits[0] += self.amount
        candidates.replace_logits(logits)


SAMPLER = Bonus
''',
        encoding="utf-8",
    )
    return path


ALL_GROUPS = "*"
"""A snapshot about the whole sampling panel shows every group (`sampling_groups`)."""
PINNED_GROUPS = ("core",)
"""The sampling panel's groups a chat snapshot shows unless it names others."""


async def pin_sampling_groups(pilot: Pilot[Any], groups: tuple[str, ...]) -> None:
    """Hide the sampling panel's groups other than `groups` (no panel: nothing)."""
    app = pilot.app
    if not isinstance(app, SamplescopeApp) or ALL_GROUPS in groups:
        return
    chat = app.chat
    await wait_until(pilot, lambda: bool(chat.query(".setting-group")))
    shown = {f"group-{group}" for group in groups}
    for group in chat.query(".setting-group").results(Collapsible):
        group.display = group.id in shown


async def screenshot_at_token(pilot: Pilot[Any], app: SamplescopeApp, index: int) -> str:
    """The screen (SVG) with the token cursor on token `index` of the last reply (the
    docs' screenshots: `tests/model/*_screenshot.py`)."""
    tokens = chat_of(app).conversation.replies[-1].tokens
    chat_of(app).enter_token_cursor()
    await pilot.pause()
    await press_at_once(pilot, *["left"] * (len(tokens) - 1 - index))
    chat_of(app).flush_now()
    await pilot.pause(0.2)
    return app.export_screenshot()
