"""The compare view: columns, divergence, token selection, editing, promotion.

Pilot tests on the fake backend for the widgets, one Pilot test of the whole flow on
the real default model, and snapshots (fake backend, fixed size, fixed clock).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Input, Select

from backend.chat.compare import first_divergence
from backend.chat.protocol import ChatBackend, ChatMessage
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.errors import SettingsError
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend
from tests.helpers import HostApp, chat_of, press_at_once, token_ids_of, wait_done, wait_until
from tui.compare.column_text import ColumnText
from tui.compare.columns import (
    CompareColumn,
    columns_varying,
    settings_summary,
    varied_columns,
)
from tui.compare.command import (
    CompareCommands,
    CompareContext,
    build_columns,
    command_entries,
    open_compare,
)
from tui.compare.edit import CompareEditScreen
from tui.compare.result import CompareResult
from tui.compare.screen import CompareScreen
from tui.widgets.prob_panel import ProbPanel

SIZE = (140, 40)
SEA = [ChatMessage("user", "Write one sentence about the sea.")]

# Fake-backend columns whose divergences from the first column fall at tokens 14, 8
# and 2 with seed 3 (found by running the fake once; any change shows in the snapshots).
FAKE_SEED = 3
FAKE_COLUMNS = [
    CompareColumn("t=0.5 k=3", SamplerSettings(temperature=0.5, top_k=3)),
    CompareColumn("t=0.8 k=3", SamplerSettings(temperature=0.8, top_k=3)),
    CompareColumn("t=0.5 k=40", SamplerSettings(temperature=0.5, top_k=40)),
    CompareColumn("t=1", SamplerSettings(temperature=1.0)),
]


def fixed_clock() -> Callable[[], float]:
    """A clock that advances 10 ms per reading: fixed stats on every run."""
    ticks = itertools.count()
    return lambda: next(ticks) * 0.01


def fake_screen(
    columns: Sequence[CompareColumn | SamplerSettings], seed: int = FAKE_SEED, max_tokens: int = 24
) -> CompareScreen:
    backend = FakeBackend(clock=fixed_clock())
    return CompareScreen(backend, SEA, list(columns), seed, max_tokens=max_tokens)


# --- helpers --------------------------------------------------------------------------


def test_columns_varying_changes_one_field() -> None:
    base = DEFAULT_CHAT_SETTINGS
    columns = columns_varying(base, "temperature", [0.5, 0.8, 1.2, "1.5"])
    assert [c.temperature for c in columns] == [0.5, 0.8, 1.2, 1.5]
    for column in columns:
        assert column.with_changes(temperature=base.temperature) == base
    labels = [c.label for c in varied_columns(base, "top_k", ["10", 0])]
    assert labels == ["top_k=10", "top_k=0"]


def test_columns_varying_rejects_bad_input() -> None:
    with pytest.raises(SettingsError, match="seed"):
        columns_varying(DEFAULT_CHAT_SETTINGS, "seed", [1, 2])
    with pytest.raises(SettingsError, match="warmth"):
        columns_varying(DEFAULT_CHAT_SETTINGS, "warmth", [1, 2])
    with pytest.raises(SettingsError, match="top_p"):
        columns_varying(DEFAULT_CHAT_SETTINGS, "top_p", [0.5, 1.5])
    with pytest.raises(SettingsError, match="top_k"):
        columns_varying(DEFAULT_CHAT_SETTINGS, "top_k", ["many"])


def test_settings_summary_names_what_is_on() -> None:
    assert settings_summary(SamplerSettings(temperature=0.0, top_k=5)) == "greedy k=5"
    assert settings_summary(DEFAULT_CHAT_SETTINGS) == "t=0.8 k=40 p=0.95 min_p=0.05 t-last"
    penalised = SamplerSettings(repeat_penalty=1.3, repeat_last_n=64, draw="gumbel")
    assert settings_summary(penalised) == "t=1 rep=1.3/64 gumbel"


def test_command_entries_and_columns() -> None:
    titles = [title for title, _, _ in command_entries()]
    assert titles[0] == "Compare: four basic presets"
    assert "Compare: vary temperature" in titles
    presets = {
        "ArgMax": SamplerSettings(temperature=0.0),
        "All t=0.8": SamplerSettings(temperature=0.8),
    }
    columns = build_columns("presets", DEFAULT_CHAT_SETTINGS, presets)
    assert [c.label for c in columns] == ["ArgMax", "All t=0.8"]
    varied = build_columns("temperature", DEFAULT_CHAT_SETTINGS, presets)
    assert [c.settings.temperature for c in varied] == [0.5, 0.8, 1.2, 1.5]


def test_too_few_columns_is_an_error() -> None:
    with pytest.raises(SettingsError, match="columns"):
        CompareScreen(FakeBackend(), SEA, [SamplerSettings()], 1)


# --- the screen on the fake backend ---------------------------------------------------


@pytest.mark.anyio
async def test_fake_columns_stream_and_mark_the_divergence() -> None:
    app = HostApp(lambda: fake_screen(FAKE_COLUMNS[:3]))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        views = screen.column_views
        assert [len(v.tokens) for v in views] == [24, 24, 24]
        assert all(v.finished is not None for v in views)
        # Found by running the fake once (see FAKE_SEED); first_divergence agrees.
        assert [v.divergence for v in views] == [None, 14, 8]
        for view in views[1:]:
            assert view.divergence == first_divergence(views[0].token_ids, view.token_ids)
            assert view.token_ids[: view.divergence] == views[0].token_ids[: view.divergence]
        assert views[0].divergence is None
        # Every column used the comparison's seed.
        assert {screen.column_settings(i).seed for i in range(3)} == {FAKE_SEED}


@pytest.mark.anyio
async def test_token_cursor_keys_and_click_show_the_probabilities() -> None:
    app = HostApp(lambda: fake_screen(FAKE_COLUMNS[:2]))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        panel = screen.query_one(ProbPanel)
        assert not panel.display
        await pilot.press("2", "right")
        column = screen.column_views[1]
        # The cursor starts at the divergence, where the interesting token is.
        assert column.cursor == column.divergence
        assert panel.display and panel.step is column.tokens[column.cursor].step
        await pilot.press("right", "right", "left")
        assert column.cursor == (column.divergence or 0) + 1
        assert panel.step is column.tokens[column.cursor].step
        # A click on the first token of column 1 selects it there.
        first = screen.column_views[0]
        await pilot.click(first.query_one(ColumnText), offset=(0, 0))
        await pilot.pause()
        assert first.cursor == 0
        assert screen.focused is first
        assert panel.step is first.tokens[0].step
        # A click on the second line selects a later token of that column.
        await pilot.click(column.query_one(ColumnText), offset=(3, 1))
        await pilot.pause()
        assert screen.focused is column
        assert column.cursor is not None and column.cursor > 0
        assert panel.step is column.tokens[column.cursor].step


@pytest.mark.anyio
async def test_rerun_with_the_same_seed_repeats_and_promote_returns_the_column() -> None:
    app = HostApp(lambda: fake_screen(FAKE_COLUMNS[:3]))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        first = token_ids_of(screen)
        await pilot.press("r")
        await wait_done(pilot, screen)
        assert token_ids_of(screen) == first
        await pilot.press("3", "p")
        await pilot.pause()
    assert len(app.results) == 1
    result = app.results[0]
    assert result is not None
    assert result.column == 2
    assert result.token_ids == first[2]
    assert result.settings == FAKE_COLUMNS[2].settings.with_changes(seed=FAKE_SEED)
    assert result.label == "t=0.5 k=40"
    assert result.text and result.finish_reason == "max_tokens"


@pytest.mark.anyio
async def test_escape_stops_a_running_comparison_without_a_result() -> None:
    backend = FakeBackend(token_delay=0.01)
    app = HostApp(lambda: CompareScreen(backend, SEA, FAKE_COLUMNS[:2], 5, max_tokens=400))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        assert screen is not None
        column = screen.column_views[0]
        while not column.tokens:
            await pilot.pause(0.02)
        await pilot.press("escape")
        await pilot.pause()
        # The worker thread let go of the model before the screen went away.
        assert screen.done
        assert len(column.tokens) < 400  # cut short, not run out
    assert app.results == [None]


@pytest.mark.anyio
async def test_edit_form_changes_seed_and_a_column() -> None:
    app = HostApp(lambda: fake_screen(FAKE_COLUMNS[:2]))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        await pilot.press("e")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, CompareEditScreen)
        form.query_one("#edit-seed", Input).value = "77"
        form.query_one("#edit-source-1", Select).value = "vary"
        form.query_one("#edit-field-1", Select).value = "top_k"
        await pilot.pause()
        value = form.query_one("#edit-value-1", Input)
        assert not value.disabled and value.value == "3"  # the base's top_k
        value.value = "7"
        form.query_one("#edit-source-2", Select).value = "vary"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await wait_done(pilot, screen)
        assert screen.seed == 77
        assert [c.label for c in screen.columns] == ["t=0.5 k=3", "top_k=7", "temperature=0.5"]
        assert screen.columns[1].settings == FAKE_COLUMNS[0].settings.with_changes(top_k=7)
        assert len(screen.column_views) == 3
        assert all(len(v.tokens) == 24 for v in screen.column_views)


@pytest.mark.anyio
async def test_edit_form_shows_a_bad_value() -> None:
    app = HostApp(lambda: fake_screen(FAKE_COLUMNS[:2]))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        await pilot.press("e")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, CompareEditScreen)
        form.query_one("#edit-source-1", Select).value = "vary"
        form.query_one("#edit-field-1", Select).value = "top_p"
        await pilot.pause()
        form.query_one("#edit-value-1", Input).value = "1.7"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is form
        error = str(form.query_one("#edit-error").render())
        assert "top_p" in error and "1.7" in error


class PaletteHostApp(App[None]):
    """An app with the compare command wired as the report tells the app owner."""

    COMMANDS = App.COMMANDS | {CompareCommands}

    def __init__(self, backend: ChatBackend, messages: list[ChatMessage]) -> None:
        super().__init__()
        self.backend = backend
        self.messages = messages
        self.results: list[CompareResult | None] = []

    def compare_context(self) -> CompareContext | str:
        if not self.messages:
            return "nothing to compare yet: send a message first"
        return CompareContext(
            self.backend, self.messages, DEFAULT_CHAT_SETTINGS, self.results.append, max_tokens=16
        )


@pytest.mark.anyio
async def test_open_compare_from_the_app() -> None:
    app = PaletteHostApp(FakeBackend(), [])
    async with app.run_test(size=SIZE) as pilot:
        assert open_compare(app, "temperature") is None  # no user turn: told why
        app.messages = list(SEA)
        screen = open_compare(app, "temperature")
        assert screen is not None
        await pilot.pause()
        assert app.screen is screen
        assert open_compare(app) is None  # one comparison at a time
        await wait_done(pilot, screen)
        assert [c.settings.temperature for c in screen.columns] == [0.5, 0.8, 1.2, 1.5]
        assert screen.seed == DEFAULT_CHAT_SETTINGS.seed
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [None]


@pytest.mark.anyio
async def test_the_chat_app_opens_compare_and_takes_the_promoted_reply() -> None:
    from tui.app import SamplescopeApp

    app = SamplescopeApp(FakeBackend(), max_tokens=16, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        while not chat_of(app).ready:
            await pilot.pause(0.02)
        await pilot.press("ctrl+d")  # no user turn yet: a notification, no screen
        await pilot.pause()
        assert not isinstance(app.screen, CompareScreen)
        await pilot.click("#prompt")
        await press_at_once(pilot, *"the cat sat", "enter")
        while chat_of(app).generating or not chat_of(app).conversation.finished:
            await pilot.pause(0.02)
        await pilot.press("ctrl+d")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_done(pilot, screen)
        assert [c.label for c in screen.columns] == [
            "ArgMax",
            "All t=0.8",
            "All t=1.5",
            "TopK k=40 t=0.8",
        ]
        assert screen.seed == app.live.current.seed
        assert all(len(v.tokens) == 16 for v in screen.column_views)
        # Chat keys do nothing behind the comparison.
        conversation = list(chat_of(app).conversation.messages)
        await pilot.press("ctrl+n", "ctrl+r")
        await pilot.pause()
        assert chat_of(app).conversation.messages == conversation and not chat_of(app).generating
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CompareScreen)

        # The command palette: "vary top-k" opens the view on the current sliders.
        await pilot.press("ctrl+p")
        await pilot.pause()
        await press_at_once(pilot, *"vary top-k")
        for _ in range(100):
            await pilot.pause(0.02)
            await pilot.press("enter")
            if isinstance(app.screen, CompareScreen):
                break
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_done(pilot, screen)
        assert [c.settings.top_k for c in screen.columns] == [1, 10, 40, 0]
        assert screen.columns[0].settings.with_changes(top_k=40) == app.live.current
        # The view regenerates the last user turn, not the reply after it.
        assert chat_of(app).conversation.messages[-1].role == "assistant"
        assert screen.messages == chat_of(app).conversation.messages[:-1]
        promoted = screen.column_views[1]
        text = "".join(token.text for token in promoted.tokens)
        count = len(chat_of(app).conversation.messages)
        await pilot.press("2", "p")
        await pilot.pause()
        assert not isinstance(app.screen, CompareScreen)
        # The column replaced the last reply, in the conversation and on screen.
        assert len(chat_of(app).conversation.messages) == count
        assert chat_of(app).conversation.messages[-1] == ChatMessage("assistant", text)
        assert [t.step.token_id for t in chat_of(app).conversation.replies[-1].tokens] == list(
            promoted.token_ids
        )
        assert len(chat_of(app).conversation.replies) == 1


# --- the whole flow on the real model -------------------------------------------------


def _snap_app(columns: Sequence[CompareColumn]) -> HostApp:
    return HostApp(lambda: fake_screen(columns))


def test_snapshot_two_columns_with_a_selected_token(snap_compare: Any) -> None:
    app = _snap_app([FAKE_COLUMNS[0], FAKE_COLUMNS[2]])

    async def run_before(pilot: Pilot[Any]) -> None:
        assert app.compare_screen is not None
        await wait_done(pilot, app.compare_screen)
        await pilot.press("2", "right")
        views = app.compare_screen.column_views
        await wait_until(pilot, lambda: views[1].cursor is not None)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_four_columns(snap_compare: Any) -> None:
    app = _snap_app(FAKE_COLUMNS)

    async def run_before(pilot: Pilot[Any]) -> None:
        assert app.compare_screen is not None
        await wait_done(pilot, app.compare_screen)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.anyio
async def test_an_alternative_chosen_in_a_column_branches_the_chat_from_there() -> None:
    from tui.app import SamplescopeApp
    from tui.widgets.alternatives import AlternativesScreen

    app = SamplescopeApp(FakeBackend(), max_tokens=12, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        while not chat_of(app).ready:
            await pilot.pause(0.02)
        await pilot.click("#prompt")
        await press_at_once(pilot, *"the cat sat", "enter")
        while chat_of(app).generating or not chat_of(app).conversation.finished:
            await pilot.pause(0.02)
        await pilot.press("ctrl+d")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_done(pilot, screen)
        column = screen.column_views[1]
        column_ids = list(column.token_ids)
        await pilot.press("2", "a")  # no token selected yet: a notice, no list
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("home", "right", "right", "right", "a")  # the fourth token
        await pilot.pause()
        assert isinstance(app.screen, AlternativesScreen)
        step = column.tokens[3].step
        chosen = next(int(t) for t in step.table.token_ids if int(t) != column_ids[3])
        rank = [int(t) for t in step.table.token_ids].index(chosen)
        await pilot.press(*(["down"] * rank), "enter")
        await pilot.pause()
        assert not isinstance(app.screen, (CompareScreen, AlternativesScreen))
        while chat_of(app).generating or len(chat_of(app).conversation.finished) < 2:
            await pilot.pause(0.02)

        branch = chat_of(app).conversation.replies[-1]
        ids = [t.step.token_id for t in branch.tokens]
        assert ids[:3] == column_ids[:3] and ids[3] == chosen
        assert branch.fork_at == 3 and branch.parent is not None
        assert [t.step.token_id for t in branch.parent.tokens] == column_ids
        assert len(branch.tree) == 3  # the first reply, the column, the new branch


@pytest.mark.anyio
async def test_question_mark_explains_the_divergence_line() -> None:
    app = HostApp(lambda: CompareScreen(FakeBackend(), SEA, FAKE_COLUMNS[:2], FAKE_SEED))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        marker = screen.column_views[1].query_one(".column-marker")
        assert "margin A/B" in str(marker.tooltip)
        assert "? says what the margins and Δlogit are" in str(
            screen.query_one("#compare-hint").render()
        )
        await pilot.press("question_mark")
        await pilot.pause()
        shown = [n.message for n in app._notifications]
        assert any("Δlogit A/B: column 1's token's logit" in m for m in shown)
