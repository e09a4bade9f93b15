"""A kept sweep is one entry of the saved chats (ctrl+o), not a chat per sample:
Enter opens its frontier, whose samples open as chats; d deletes it with its samples;
chats of their own (and samples saved before sweeps were kept) stay listed as chats."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from backend.session.recorded_sweep import keep_sweep, kept_sweep
from backend.store.store import ChatStore, SweepSummary
from tests.helpers import chat_of, wait_until
from tests.tui.test_sweep_screen import fixed_result
from tests.tui.test_tui_snapshots import fake_backend, make_app, send
from tui.app import SamplescopeApp
from tui.history.screen import HistoryScreen
from tui.sweep.screen import SweepScreen
from tui.widgets.confirm import ConfirmScreen

pytestmark = pytest.mark.anyio

SIZE = (110, 34)


async def new_chat(pilot: Pilot[Any], app: SamplescopeApp, text: str) -> int:
    """Send `text` in a new chat; the saved chat's id."""
    await pilot.press("ctrl+n")
    await wait_until(pilot, lambda: not chat_of(app).conversation.replies)
    await send(pilot, app, text)
    await wait_until(pilot, lambda: bool(chat_of(app).conversation.finished))
    recorder = chat_of(app).conversation.recorder
    assert recorder is not None and recorder.chat_id is not None, recorder
    return recorder.chat_id


def history(app: SamplescopeApp) -> HistoryScreen:
    screen = app.screen
    assert isinstance(screen, HistoryScreen)
    return screen


@pytest.mark.slow
async def test_a_kept_sweep_is_one_entry_that_opens_its_frontier(tmp_path: Path) -> None:
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        fake = fake_backend()
        model = tmp_path / "fake.gguf"
        model.write_bytes(b"GGUF not really a model")  # the store hashes the model file
        fake._info = replace(fake.info, path=str(model))
        app = make_app(fake, store=store)
        async with app.run_test(size=SIZE) as pilot:
            own = await new_chat(pilot, app, "a chat of its own")
            samples = [await new_chat(pilot, app, f"tell me about the sea {n}") for n in (1, 2)]
            result = fixed_result()
            records = tuple(
                replace(record, chat_id=chat)
                for record, chat in zip(result.samples, samples, strict=False)
            )
            sweep_id = keep_sweep(store, replace(result, samples=records))
            assert sweep_id is not None
            assert kept_sweep(store, sweep_id).samples == records
            await pilot.press("ctrl+n", "ctrl+o")
            await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen))
            screen = history(app)
            entries = screen.entries
            assert len(entries) == 2  # the sweep (newest) and the chat of its own
            assert isinstance(entries[0], SweepSummary) and entries[0].samples == 2
            assert entries[1].id == own and not isinstance(entries[1], SweepSummary)
            table = screen.query_one(DataTable)
            assert str(table.get_row_at(0)[-1]) == "2 samples"
            assert str(table.get_row_at(0)[1]).startswith("sweep · 2 prompts × 3 settings")
            # a search that finds a sample finds its sweep
            await pilot.press("slash", *"sea 2")
            await wait_until(pilot, lambda: len(history(app).entries) == 1)
            assert isinstance(history(app).entries[0], SweepSummary)
            await pilot.press("enter")  # from the search box: the match
            await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen))
            sweep = app.screen
            assert isinstance(sweep, SweepScreen) and sweep.result.samples == records
            await pilot.press("enter", "enter")  # the first setting's first sample
            await wait_until(pilot, lambda: not isinstance(app.screen, SweepScreen))
            await wait_until(pilot, lambda: bool(chat_of(app).conversation.messages))
            assert chat_of(app).conversation.messages[0].content == "tell me about the sea 1"
            # the chat of its own opens as before
            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen))
            await pilot.press("down", "enter")
            await wait_until(pilot, lambda: not isinstance(app.screen, HistoryScreen))
            await wait_until(
                pilot,
                lambda: (
                    [m.content for m in chat_of(app).conversation.messages][:1]
                    == ["a chat of its own"]
                ),
            )
            # d on the sweep deletes it with its samples
            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen))
            await pilot.press("d")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("y")
            await wait_until(pilot, lambda: len(history(app).entries) == 1)
            assert [c.id for c in store.list_chats()] == [own]
