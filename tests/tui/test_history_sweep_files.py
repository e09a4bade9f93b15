"""Deleting a kept sweep in the saved chats (ctrl+o, d) deletes the result file `sweep`
wrote for `--view` too when the file is samplescope's own: in its data folder and
holding that sweep's result; never a file elsewhere, nor one holding something else."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import pytest

from backend.config.paths import DATA_DIR_ENV, data_dir
from backend.session.recorded_sweep import delete_kept_sweep, keep_sweep, result_file
from backend.store.store import ChatStore, SweepSummary
from tests.helpers import wait_until
from tests.tui.test_history_sweeps import history, new_chat
from tests.tui.test_sweep_screen import fixed_result
from tests.tui.test_tui_snapshots import fake_backend, make_app
from tui.cli.commands.sweep import keep_result
from tui.history.screen import HistoryScreen
from tui.widgets.confirm import ConfirmScreen

pytestmark = pytest.mark.anyio


def kept_with_file(store: ChatStore, chat_ids: list[int]) -> tuple[int, Path]:
    """A sweep kept with samples `chat_ids`, its result file written as `sweep` writes it."""
    result = fixed_result()
    records = tuple(
        replace(record, chat_id=chat)
        for record, chat in zip(result.samples, chat_ids, strict=False)
    )
    result = replace(result, samples=records)
    sweep_id = keep_sweep(store, result)
    assert sweep_id is not None
    path = keep_result(argparse.Namespace(db=str(store.path)), result)
    assert path is not None and path.is_file() and path == result_file(store.path, result)
    return sweep_id, path


async def test_d_on_a_sweep_deletes_its_result_file_in_the_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    with ChatStore(tmp_path / "data" / "chats.sqlite3") as store:
        fake = fake_backend()
        model = tmp_path / "fake.gguf"
        model.write_bytes(b"GGUF not really a model")  # the store hashes the model file
        fake._info = replace(fake.info, path=str(model))
        app = make_app(fake, store=store)
        async with app.run_test(size=(110, 34)) as pilot:
            samples = [await new_chat(pilot, app, f"tell me about the sea {n}") for n in (1, 2)]
            _, path = kept_with_file(store, samples)
            await pilot.press("ctrl+n", "ctrl+o")
            await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen))
            assert isinstance(history(app).entries[0], SweepSummary)
            await pilot.press("d")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("y")
            await wait_until(pilot, lambda: not history(app).entries)
            assert not path.exists()
            assert any(str(path) in str(n.message) for n in app._notifications)


def test_a_result_file_outside_the_data_folder_or_of_another_result_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    (tmp_path / "elsewhere").mkdir()
    with ChatStore(tmp_path / "elsewhere" / "chats.sqlite3") as store:  # --db elsewhere
        chat = store.new_chat("a sample")
        sweep_id, path = kept_with_file(store, [chat])
        assert delete_kept_sweep(store, sweep_id, data_dir()) is None
        assert path.is_file() and not store.list_chats()
    with ChatStore(tmp_path / "data" / "chats.sqlite3") as store:
        chat = store.new_chat("a sample")
        sweep_id, path = kept_with_file(store, [chat])
        path.write_text('{"not": "this sweep"}', encoding="utf-8")  # another file there
        assert delete_kept_sweep(store, sweep_id, data_dir()) is None
        assert path.is_file()
        # this one's own file goes
        chat = store.new_chat("a sample")
        sweep_id, path = kept_with_file(store, [chat])
        assert delete_kept_sweep(store, sweep_id, data_dir()) == path and not path.exists()
