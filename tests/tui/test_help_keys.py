"""The help screen is read from the bindings: every screen's keys, a remapped key as
remapped, and the chat's keys live only while the chat is on top."""

from __future__ import annotations

import pytest
from textual.binding import Binding

from backend.config.config import Config
from tests.fake_backend import FakeBackend
from tests.helpers import wait_until
from tui.app import APP_WIDE_BINDINGS, SamplescopeApp
from tui.chat.keys import CHAT_BINDINGS
from tui.help.screen import DOCS, HelpScreen, binding_rows, key_name
from tui.help.sections import SCREENS, key_sections
from tui.history.screen import HistoryScreen

pytestmark = pytest.mark.anyio

SIZE = (120, 36)


def test_every_chat_key_is_listed_with_its_text() -> None:
    chat = dict(dict(key_sections(APP_WIDE_BINDINGS, {}))["chat"])
    assert len(chat) == len(CHAT_BINDINGS)
    for binding in CHAT_BINDINGS:
        assert chat[key_name(binding.key)] == binding.tooltip


def test_every_screen_is_a_section_after_the_app_wide_keys() -> None:
    sections = key_sections(APP_WIDE_BINDINGS, {})
    assert [title for title, _ in sections] == ["everywhere", *(title for title, _ in SCREENS)]
    everywhere = dict(sections[0][1])
    assert "help" in everywhere["f1"] and everywhere["ctrl+p"] == "command palette"
    assert all(rows for _, rows in sections)


def test_a_remapped_key_shows_as_remapped() -> None:
    chat = dict(dict(key_sections(APP_WIDE_BINDINGS, {"history": "f10,ctrl+h"}))["chat"])
    assert chat["f10 / ctrl+h"].startswith("saved chats")
    assert "ctrl+o" not in chat


def test_a_binding_group_and_several_keys_share_a_row() -> None:
    group = Binding.Group("token")
    rows = binding_rows(
        [
            Binding("left", "move(-1)", "token", key_display="←", group=group),
            Binding("right", "move(1)", "token", key_display="→", group=group),
            Binding("d,delete", "delete", "delete"),
            Binding("ctrl+c", "help_quit", system=True),
        ]
    )
    assert rows == [("← / →", "token"), ("d / del", "delete")]


async def test_f1_shows_the_configs_keys_and_points_at_the_docs() -> None:
    app = SamplescopeApp(
        FakeBackend(), cursor_blink=False, config=Config(keys=(("new_seed", "f12"),))
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.runner.unavailable() is None)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        chat = dict(dict(app.screen.sections)["chat"])
        assert chat["f12"] == "new random seed" and "ctrl+g" not in chat
        assert app.screen.query_one("#help-docs").display  # the docs/ page of each feature
        assert ("every key", "docs/keys.md") in DOCS
        await pilot.press("escape")
        await pilot.pause()
        seed = app.live.current.seed
        await pilot.press("f12")
        await pilot.pause()
        assert app.live.current.seed != seed


async def test_the_chats_keys_do_not_reach_through_a_screen_on_top(tmp_path: object) -> None:
    from pathlib import Path

    from backend.store.store import ChatStore

    with ChatStore(Path(str(tmp_path)) / "c.db") as store:
        app = SamplescopeApp(FakeBackend(), cursor_blink=False, store=store)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.runner.unavailable() is None)
            await pilot.press("ctrl+o")
            await pilot.pause()
            assert isinstance(app.screen, HistoryScreen)
            seed = app.live.current.seed
            await pilot.press("ctrl+g", "ctrl+o")  # the chat's new seed and saved chats
            await pilot.pause()
            assert app.live.current.seed == seed
            assert len(app.screen_stack) == 2
