"""A per-token panel is its module plus one line: a panel declared here, added to the
list the chat is made with, is shown in its column and draws the chat's selection (the
latest token while a reply streams, at its own rate; the cursor's token when it moves)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from typing import ClassVar

import pytest
from textual.widgets import Static

from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, nth_reply_finished, type_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.panels import PANELS
from tui.chat.selection import ChatPanel, PanelHost, Selection

pytestmark = pytest.mark.anyio


class ChosenToken(Static, ChatPanel):
    """A one-line panel: the selected token's text and probability."""

    NAME = "chosen"
    PAINT_EVERY = 1
    DEFAULT_CSS: ClassVar[str] = "ChosenToken { height: 1; }"

    def __init__(self, host: PanelHost) -> None:
        super().__init__("", id=self.NAME, markup=False)
        self.host = host
        self.seen: list[Selection] = []

    def watch_selected(self, selection: Selection) -> None:
        self.seen.append(selection)
        step = selection.step
        text = "—" if step is None else f"{self.host.pieces(step.token_id)!r} p {step.prob:.2f}"
        self.update(f"{selection.title}: {text}")


async def test_a_panel_added_to_the_list_draws_the_selection() -> None:
    backend = FakeBackend(pause_after_tokens=12)
    app = SamplescopeApp(backend, max_tokens=20, cursor_blink=False, panels=(*PANELS, ChosenToken))
    async with app.run_test(size=(120, 36)) as pilot:
        panel = app.query_one("#right #chosen", ChosenToken)
        assert chat_of(app).panel(ChosenToken) is panel
        await type_message(pilot, app, "hello")
        await wait_until(pilot, backend.paused.is_set)
        reply = app.conversation.replies[-1]
        await wait_until(pilot, lambda: len(reply.tokens) == 12)
        # While the reply streams, the redraw timer hands it the latest token.
        await wait_until(pilot, lambda: panel.selected.step is reply.tokens[-1].step)
        assert not panel.selected.cursor and panel.selected.title == "token 12 (latest)"
        backend.resume.set()
        await nth_reply_finished(pilot, app)
        assert panel.selected.step is reply.tokens[-1].step
        # The token cursor's token, at once.
        await pilot.press("ctrl+t", "left", "left")
        await wait_until(pilot, lambda: panel.selected.at == (0, len(reply.tokens) - 3))
        assert panel.selected.step is reply.tokens[-3].step
        assert str(panel.render()).startswith(f"reply 1 token {len(reply.tokens) - 2}/")
        assert chat_of(app).selected is panel.selected


def test_the_chat_view_names_no_panel() -> None:
    """The view makes its panels from the list: it imports no panel's module."""
    view = Path(__file__).resolve().parents[2] / "tui" / "chat" / "view.py"
    tree = ast.parse(view.read_text(encoding="utf-8"))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    for name in sorted(imported):
        if not name.startswith("tui."):
            continue
        module = importlib.import_module(name)
        panels = [
            value.__name__
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, ChatPanel)
            and value is not ChatPanel
            and value.__module__ == name
        ]
        assert not panels, f"tui/chat/view.py imports the panels {panels} from {name}"
    assert {kind.__module__ for kind in PANELS}.isdisjoint(imported)
