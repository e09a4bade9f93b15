"""The score screen on the fake backend: the text goes to the scorer on the runner's
thread, the result comes back as a message and fills the table; files open; errors
show. (tests/model/test_score_screen_model.py checks the figures on the real model.)"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static, TextArea

from backend.score.text_score import Alternative, TextScore, TokenScore
from backend.session.backend import SessionBackend
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, served_folders, table_measured, wait_until
from tui.app import SamplescopeApp
from tui.score.screen import ScoreScreen
from tui.score_label import logprob_label

pytestmark = pytest.mark.anyio

SIZE = (120, 36)


class WordScorer:
    """Scores a text word by word: word n has probability 1/(n+2), rank n+1; the first
    word is not scored (nothing predicts it). Records the thread it ran on."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.texts: list[str] = []

    def __call__(self, backend: SessionBackend, text: str) -> TextScore:
        self.threads.append(threading.current_thread())
        self.texts.append(text)
        words = text.split()
        tokens = [TokenScore(0, words[0], None, None, None, ())]
        for n, word in enumerate(words[1:]):
            top = (Alternative(1, " the", math.log(0.5)),)
            tokens.append(TokenScore(n + 2, f" {word}", math.log(1 / (n + 2)), n + 1, 1.5, top))
        return TextScore(tuple(tokens), 4096, 0, False)


async def open_screen(pilot: object, app: SamplescopeApp) -> ScoreScreen:
    await wait_until(pilot, lambda: chat_of(app).ready)  # type: ignore[arg-type]
    await pilot.press("f8")  # type: ignore[attr-defined]
    # mounted: the text box has the keyboard (the screen's on_mount gives it)
    await wait_until(
        pilot,  # type: ignore[arg-type]
        lambda: isinstance(app.screen, ScoreScreen) and isinstance(app.focused, TextArea),
    )
    screen = app.screen
    assert isinstance(screen, ScoreScreen)
    return screen


async def test_a_pasted_text_is_scored_off_the_ui_thread() -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    scorer = WordScorer()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_screen(pilot, app)
        screen.scorer = scorer
        screen.query_one(TextArea).load_text("the cat sat on the mat")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: screen.score is not None and not screen.scoring)
        assert scorer.texts == ["the cat sat on the mat"]
        assert scorer.threads[0] is not threading.main_thread()
        table = screen.query_one(DataTable)
        assert table.row_count == 6
        assert [str(c) for c in table.get_row_at(0)] == ["0", "the", "—", "—", "—", "—", ""]
        row = [str(c) for c in table.get_row_at(2)]
        assert row == ["2", "␣sat", f"{math.log(1 / 3):.3f}", "0.3333", "2", "1.50", "␣the 0.500"]
        expected = sum(math.log(1 / (n + 2)) for n in range(5))
        summary = str(screen.query_one("#score-summary", Static).render())
        assert summary == f"6 tokens, 5 scored · {logprob_label(expected, 5)}"
        await pilot.press("escape")
        assert not isinstance(app.screen, ScoreScreen)


async def test_the_fake_model_is_refused_with_a_message_and_files_open(tmp_path: Path) -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_screen(pilot, app)  # the llama.cpp scorer
        await pilot.press("ctrl+s")  # empty: a notice, nothing runs
        assert not screen.scoring
        good = tmp_path / "t.txt"
        good.write_text("Once upon a time\n", encoding="utf-8")
        bad = tmp_path / "b.bin"
        bad.write_bytes(b"\xff\xfe")
        assert not screen.open_file(bad) and screen.query_one(TextArea).text == ""
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)  # nobody writes to it: a read would wait for ever
        assert not screen.open_file(fifo) and screen.query_one(TextArea).text == ""
        assert not screen.open_file(tmp_path / "missing.txt")
        await pilot.press("ctrl+o", *str(good), "enter")
        await pilot.pause()
        assert screen.query_one(TextArea).text == "Once upon a time\n"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: not screen.scoring)
        summary = str(screen.query_one("#score-summary", Static).render())
        assert summary == "scoring a text needs a llama.cpp model"
        assert screen.score is None


def test_snapshot_a_scored_text(snap_compare: object) -> None:
    from tests.tui.test_tui_snapshots import fake_backend, make_app

    app = make_app(fake_backend())
    text = "the cat sat on the mat and then it was happy"

    async def run(pilot: Pilot[object]) -> None:
        screen = await open_screen(pilot, app)
        table = screen.query_one(DataTable)
        screen.scorer = WordScorer()
        screen.query_one(TextArea).load_text(text)
        await pilot.press("ctrl+s")

        def scored() -> bool:
            """The result shown (a message), the job's end handed over (the runner's
            drain) and the rows laid out (the table's idle moment): three steps whose
            order and timing a loaded machine changes."""
            done = screen.score is not None and not screen.scoring and app.runner.idle
            return done and table.row_count == len(text.split()) and table_measured(table)

        await wait_until(pilot, scored)
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(app, terminal_size=SIZE, run_before=run)  # type: ignore[operator]


async def test_served_the_screen_opens_files_only_in_samplescopes_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = served_folders(tmp_path, monkeypatch) / "t.txt"
    own.write_text("Once upon a time\n", encoding="utf-8")
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_screen(pilot, app)
        assert not screen.open_file(Path("/etc/passwd"))
        await pilot.pause()
        assert screen.query_one(TextArea).text == ""
        assert any("opens files only in" in str(n.message) for n in app._notifications)
        assert screen.open_file(own) and screen.query_one(TextArea).text == "Once upon a time\n"
