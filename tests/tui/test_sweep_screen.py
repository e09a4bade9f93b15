"""The sweep screen on a fixed sweep result: the frontier snapshot, choosing a point,
listing its samples, opening one, switching the diversity measure.

Regenerate the snapshot with `pytest tests/tui/test_sweep_screen.py --snapshot-update`
and look at it before committing.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable

from backend.session.sweep import SweepPlan, SweepSetting
from backend.session.sweep_result import DIVERSITY_AXES, SampleRecord, SweepResult
from backend.store.store import ChatStore
from sampling.analysis.sweep_metrics import SampleFigures
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend
from tests.helpers import StepClock, chat_of, columns_fit, press_at_once, table_measured, wait_until
from tests.tui.test_tui_snapshots import fake_backend, make_app, send
from tui.app import SamplescopeApp
from tui.cli.main import main
from tui.sweep.command import open_sweep
from tui.sweep.frontier_plot import FrontierPlot
from tui.sweep.screen import SweepScreen

pytestmark = pytest.mark.anyio

SIZE = (110, 34)
TEXTS = [
    "The sea is calm and blue.",
    "The sea is calm and grey.",
    "Waves break on the shore at night.",
    "A gull cries over [bold]cold[/bold] water.",
]


def fixed_result() -> SweepResult:
    """Three settings × 2 prompts × 2 samples with made-up numbers."""
    settings = tuple(
        SweepSetting(label, SamplerSettings(temperature=t, min_p=m))
        for label, t, m in [("t=0.7", 0.7, 0.0), ("t=1.5 min_p=0.1", 1.5, 0.1), ("t=3", 3.0, 0.0)]
    )
    plan = SweepPlan(("Tell me about the sea.", "A line on the sea."), settings, 2, seed=5)
    records = []
    chat = 100
    for setting, quality in enumerate((-0.5, -1.2, -4.0)):
        for prompt in range(2):
            for sample in range(2):
                text = TEXTS[(setting + sample) % 4] if setting else TEXTS[0]
                n = 10 + setting + prompt + sample
                figures = SampleFigures(
                    prompt, setting, text, n, quality * n * (1 + 0.4 * prompt), setting, "eos"
                )
                records.append(SampleRecord(figures, sample, 5 + sample, tuple(range(n)), chat))
                chat += 1
    return SweepResult("/models/SmolLM2.gguf", plan, tuple(records), top_k=40)


class SweepApp(App[int | None]):
    """Shows the sweep screen and exits with what it dismisses with."""

    def __init__(self, result: SweepResult) -> None:
        super().__init__()
        self.result = result

    def on_mount(self) -> None:
        self.push_screen(SweepScreen(self.result), self.exit)


def screen_of(pilot: Pilot[Any]) -> SweepScreen:
    screen = pilot.app.screen
    assert isinstance(screen, SweepScreen)
    return screen


def test_snapshot(snap_compare: Any) -> None:
    async def ready(pilot: Pilot[Any]) -> None:
        # the key goes to the table once the screen has listed the settings and focused it
        await wait_until(
            pilot,
            lambda: (
                isinstance(pilot.app.screen, SweepScreen)
                and isinstance(pilot.app.focused, DataTable)
                and table_measured(pilot.app.focused)
            ),
        )
        await pilot.press("down")  # the second setting selected
        await wait_until(pilot, lambda: screen_of(pilot).selected == 1)
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(SweepApp(fixed_result()), terminal_size=SIZE, run_before=ready)


def test_the_fixed_result_has_a_frontier() -> None:
    result = fixed_result()
    # Setting 0 repeats one text (least diverse, most likely); 2 is as diverse as 1
    # and less likely: off the frontier.
    assert result.frontier() == [0, 1]
    assert all(result.frontier(axis) == [0, 1] for axis in DIVERSITY_AXES)
    metrics = result.metrics
    assert metrics[0].logprob is not None and metrics[0].logprob.stderr is not None


async def test_choosing_a_point_lists_its_samples_and_opens_one() -> None:
    app = SweepApp(fixed_result())
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        await pilot.press("down", "down")
        await pilot.pause()
        assert screen.selected == 2
        await pilot.press("enter")
        await pilot.pause()
        assert screen.listing == 2
        table = screen.query_one(DataTable)
        assert table.row_count == 4
        # Model text is shown literally: the markup stays text.
        assert any("[bold]cold[/bold]" in str(table.get_row_at(r)[-1]) for r in range(4))
        await pilot.press("escape")
        await pilot.pause()
        assert screen.listing is None and screen.selected == 2
        await pilot.press("enter", "down", "enter")
        await pilot.pause()
    # Setting 2's second sample: prompt 0, seed 6 (chat ids count up from 100).
    assert app.return_value == 100 + 2 * 4 + 1


async def test_each_listing_draws_its_columns_as_wide_as_their_widest_cells() -> None:
    app = SweepApp(fixed_result())
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table_measured(table))
        # each checked right after the fill, before the table is idle
        screen.show_samples(1)
        assert table.row_count == 4 and columns_fit(table)
        screen.action_back()
        assert table.row_count == 3 and columns_fit(table)
        screen.action_next_axis()
        assert str(table.ordered_columns[4].label) == "distinct-2" and columns_fit(table)


async def test_d_switches_the_diversity_measure_and_escape_closes() -> None:
    app = SweepApp(fixed_result())
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        assert screen.axis == "ngram_diversity"
        await pilot.press("d")
        await pilot.pause()
        assert screen.axis == "distinct_2"
        assert screen.query_one(FrontierPlot).axis == "distinct_2"
        await pilot.press("d", "d", "d")
        assert screen.axis == "ngram_diversity"
        await pilot.press("escape")
        await pilot.pause()
    assert app.return_value is None


async def test_in_the_app_the_sample_chosen_becomes_the_chat(tmp_path: Path) -> None:
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        fake = fake_backend()
        model = tmp_path / "fake.gguf"
        model.write_bytes(b"GGUF not really a model")  # the store hashes the model file
        fake._info = replace(fake.info, path=str(model))
        # The sample's chat, saved as a sweep saves it (a real sweep's chats are tested
        # on the model in tests/model/test_sweep.py).
        app = make_app(fake, store=store)
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "tell me about the sea")
            await wait_until(pilot, lambda: bool(chat_of(app).conversation.finished))
            recorder = chat_of(app).conversation.recorder
            assert recorder is not None and recorder.chat_id is not None, recorder.error
            chat_id = recorder.chat_id
            reply_text = chat_of(app).conversation.replies[-1].text
            await pilot.press("ctrl+n")
            await wait_until(pilot, lambda: not chat_of(app).conversation.replies)
            result = fixed_result()
            first = result.samples[0]
            result = replace(result, samples=(replace(first, chat_id=chat_id),))
            open_sweep(app, result)
            await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen))
            await pilot.press("enter", "enter")
            await wait_until(pilot, lambda: not isinstance(app.screen, SweepScreen))
            await wait_until(pilot, lambda: bool(chat_of(app).conversation.replies))
            assert chat_of(app).conversation.replies[-1].text == reply_text
            assert chat_of(app).conversation.messages[0].content == "tell me about the sea"
            # The sample's own settings are on the sliders, its seed too.
            assert app.live.current == SamplerSettings(temperature=0.7, min_p=0.0, seed=5)
            # The palette goes back to the list the sample was chosen from.
            await pilot.press("ctrl+p")
            await pilot.pause()
            await press_at_once(pilot, *"back to the frontier")
            await pilot.pause(0.3)
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen))
            screen = app.screen
            assert isinstance(screen, SweepScreen)
            assert (screen.listing, screen.selected) == (0, 0)
            await pilot.press("escape")
            await pilot.pause()
            assert screen.listing is None  # the frontier and the settings


def test_sweep_view_file_opens_the_app_on_the_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(fixed_result().to_json()), encoding="utf-8")
    ran: list[SamplescopeApp] = []
    monkeypatch.setattr(SamplescopeApp, "run", lambda self: ran.append(self))
    db = tmp_path / "chats.sqlite3"
    assert main(["sweep", "--view", str(path), "--db", str(db), "--threads", "1"]) == 0
    [app] = ran
    assert app.store is not None and app.store.path == db
    pushed: list[object] = []
    monkeypatch.setattr(app, "push_screen", lambda screen, callback: pushed.append(screen))
    assert app._on_start is not None
    app._on_start(app)
    [screen] = pushed
    assert isinstance(screen, SweepScreen) and screen.result.to_json() == fixed_result().to_json()


def test_sweep_view_of_a_file_that_is_no_sweep(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"text": "a generate --json"}', encoding="utf-8")
    assert main(["sweep", "--view", str(path)]) == 2


async def test_a_sample_chosen_while_the_model_loads_opens_once_it_is_loaded(
    tmp_path: Path,
) -> None:
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        chat_id = store.new_chat("sweep · t=0.7 · seed 5 · the sea", None)
        store.add_message(chat_id, "user", "Tell me about the sea.")
        store.add_message(chat_id, "assistant", "The sea is calm and blue.")
        loaded = threading.Event()
        fake = fake_backend()

        def slow_load() -> FakeBackend:
            loaded.wait(30)
            return fake

        app = SamplescopeApp(
            backend_factory=slow_load, clock=StepClock(), cursor_blink=False, store=store
        )
        result = fixed_result()
        result = replace(result, samples=(replace(result.samples[0], chat_id=chat_id),))
        async with app.run_test(size=SIZE) as pilot:
            open_sweep(app, result)
            await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen))
            await pilot.press("enter", "enter")
            await wait_until(pilot, lambda: not isinstance(app.screen, SweepScreen))
            assert not chat_of(app).conversation.messages  # not yet: the model is loading
            loaded.set()
            await wait_until(pilot, lambda: len(chat_of(app).conversation.messages) == 2)
            assert chat_of(app).conversation.messages[1].content == "The sea is calm and blue."


async def test_y_copies_the_generate_line_of_a_setting_and_of_a_sample() -> None:
    import shlex

    from sampling.built_in import DEFAULT_CHAT_SETTINGS
    from tui.cli.main import build_parser
    from tui.cli.options.settings import settings_from_args

    copied: list[str] = []
    app = SweepApp(fixed_result())
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "y", "enter", "down", "down", "y")
        await pilot.pause()
        # the lines hold the prompts: shown as text, never read as markup
        assert all(not n.markup for n in app._notifications if n.message in copied)
    setting = fixed_result().plan.settings[1].settings
    expected = [(setting.with_changes(seed=5), "Tell me about the sea.")]
    expected.append((setting.with_changes(seed=5), "A line on the sea."))  # prompt 2's first
    for line, (settings, prompt) in zip(copied, expected, strict=True):
        words = shlex.split(line)
        assert words[:3] == ["samplescope", "generate", prompt]
        assert words[words.index("--model") + 1] == "/models/SmolLM2.gguf"
        args = build_parser().parse_args(words[1:])
        assert settings_from_args(args, DEFAULT_CHAT_SETTINGS) == settings
