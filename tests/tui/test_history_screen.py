"""The saved-chats screen: list, search, open, delete with a confirm; one snapshot.

Regenerate the snapshot with `pytest tests/test_history_screen.py --snapshot-update`
and look at it before committing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable

from backend.store.store import ChatStore, ModelRef
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.helpers import DateClock, columns_fit, press_at_once, table_measured, wait_until
from tui.history.screen import HistoryScreen
from tui.widgets.confirm import ConfirmScreen

pytestmark = pytest.mark.anyio

SIZE = (100, 16)
MODEL = ModelRef("/models/SmolLM2-135M-Instruct.Q4_1.gguf", 10, "ee" * 32)


class HistoryApp(App[int | None]):
    """Shows the history screen and exits with what it dismisses with."""

    def __init__(self, store: ChatStore) -> None:
        super().__init__()
        self.store = store

    def on_mount(self) -> None:
        self.push_screen(HistoryScreen(self.store), self.exit)


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def store(tmp_path: Path, utc: None) -> Iterator[ChatStore]:
    every_five_hours = DateClock(datetime(2026, 5, 1, 4, 0, tzinfo=UTC), timedelta(hours=5))
    with ChatStore(tmp_path / "chats.sqlite3", clock=every_five_hours) as opened:
        for title, text, replies in [
            ("Why is the sky blue?", "Why is the sky blue?", 1),
            ("A poem about [bold]markup[/bold]", "write a poem", 2),
            ("Count to ten", "count to ten please", 0),
        ]:
            chat = opened.new_chat(title, MODEL)
            opened.add_message(chat, "user", text)
            for _ in range(replies):
                writer = opened.begin_reply(chat, MODEL, DEFAULT_CHAT_SETTINGS)
                writer.append_token(0, 1, DEFAULT_CHAT_SETTINGS, "ok")
                writer.finish("eos", None, "ok")
        yield opened


def screen_of(pilot: Pilot[object]) -> HistoryScreen:
    screen = pilot.app.screen
    assert isinstance(screen, HistoryScreen)
    return screen


def test_snapshot(snap_compare: object, store: ChatStore) -> None:
    chats = len(store.list_chats())

    async def ready(pilot: Pilot[object]) -> None:
        # pushed by the app's on_mount; listed and focused by the screen's
        await wait_until(
            pilot,
            lambda: (
                isinstance(pilot.app.screen, HistoryScreen)
                and isinstance(pilot.app.focused, DataTable)
                and pilot.app.focused.row_count == chats
                and table_measured(pilot.app.focused)
            ),
        )
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(HistoryApp(store), terminal_size=SIZE, run_before=ready)  # type: ignore[operator]


async def test_enter_opens_the_selected_chat(store: ChatStore) -> None:
    ids = [c.id for c in store.list_chats()]
    app = HistoryApp(store)
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        assert screen.entries[0].title == "Count to ten"  # newest first
        await pilot.press("down", "enter")
        await pilot.pause()
    assert app.return_value == ids[1]


async def test_search_filters_and_escape_returns_none(store: ChatStore) -> None:
    app = HistoryApp(store)
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        await pilot.press("slash", *"POEM")
        await pilot.pause()
        assert [c.title for c in screen.entries] == ["A poem about [bold]markup[/bold]"]
        assert screen.query_one(DataTable).row_count == 1
        await press_at_once(pilot, *"zzz")
        await pilot.pause()
        assert screen.entries == []
        assert "No saved chat matches" in str(screen.query_one("#history-empty").render())
        await pilot.press("escape")
        await pilot.pause()
    assert app.return_value is None


async def test_a_refill_draws_each_column_as_wide_as_its_widest_cell(store: ChatStore) -> None:
    app = HistoryApp(store)
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == 3 and table_measured(table))
        store.new_chat("A [red]title[/red] far longer than the others", MODEL)
        screen.refresh_list()  # what a search does; checked before the table is idle
        assert table.row_count == 4
        assert columns_fit(table)
        titles = [str(cell) for cell in table.get_column("title")]
        assert any(t.startswith("A [red]title[/red] far longer") for t in titles)


async def test_delete_asks_first(store: ChatStore) -> None:
    app = HistoryApp(store)
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        first = screen.entries[0]
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert store.list_chats()[0].id == first.id  # kept
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("enter")  # the focused button is "No"
        await pilot.pause()
        assert len(store.list_chats()) == 3
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert first.id not in [c.id for c in store.list_chats()]
        assert all(not n.markup for n in app._notifications)  # the title, as text
        assert [c.id for c in screen_of(pilot).entries] == [c.id for c in store.list_chats()]


async def test_a_long_title_leaves_the_model_and_replies_in_view(store: ChatStore) -> None:
    store.new_chat("sweep · 2 settings × 3 samples · Write a haiku about the rain " * 2, MODEL)
    app = HistoryApp(store)
    async with app.run_test(size=(80, 24)) as pilot:
        table = screen_of(pilot).query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == 4 and table_measured(table))
        # every column is in view: nothing to scroll sideways to
        assert table.virtual_size.width <= table.scrollable_content_region.width
        title = str(table.get_row_at(0)[1])
        assert title.startswith("sweep · 2 settings") and title.endswith("…")
        await pilot.resize_terminal(160, 24)  # a wider screen shows more of it
        await wait_until(pilot, lambda: len(str(table.get_row_at(0)[1])) > 2 * len(title))


async def test_enter_typed_straight_after_down_opens_the_row_moved_to(
    store: ChatStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys typed ahead are handled in order: Enter opens the row the Down before it
    moved to, not the one the cursor was on when Enter came in."""
    import textual.app

    ids = [c.id for c in store.list_chats()]
    app = HistoryApp(store)
    async with app.run_test(size=SIZE) as pilot:
        table = screen_of(pilot).query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == 3 and app.focused is table)

        async def at_once(min_sleep: float = 0.0, max_sleep: float = 1.0) -> None:
            """Queue every key before the app handles the first."""

        monkeypatch.setattr(textual.app, "wait_for_idle", at_once)
        await pilot.press("down", "down", "enter")
        await wait_until(pilot, lambda: app.return_value is not None)
    assert app.return_value == ids[2]


async def test_enter_in_the_search_box_opens_the_first_match(store: ChatStore) -> None:
    ids = [c.id for c in store.list_chats()]
    app = HistoryApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"sky", "enter")
        await wait_until(pilot, lambda: app.return_value is not None)
    assert app.return_value == ids[2]
