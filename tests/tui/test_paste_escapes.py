"""Pasting text that contains terminal escape sequences into the prompt."""

from __future__ import annotations

import pytest
from textual import events
from textual._xterm_parser import XTermParser
from textual.widgets import Input

from tests.fake_backend import FakeBackend
from tests.helpers import wait_until
from tui.app import SamplescopeApp

pytestmark = pytest.mark.anyio

PASTED = "abc\x1b[31mred\x1b[0m"


async def test_a_paste_event_reaches_the_prompt_whole() -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: app.ready)
        prompt = app.query_one("#prompt", Input)
        prompt.focus()
        await pilot.pause()
        prompt.post_message(events.Paste(PASTED))
        await pilot.pause()
        assert prompt.value == PASTED


@pytest.mark.xfail(
    strict=True,
    reason=(
        "Textual 8.2.8's XTermParser splits a bracketed paste at the first ESC inside "
        "it: the text from the ESC on arrives as key presses, then the text before it "
        "as a Paste, so the app never sees the paste whole"
    ),
)
def test_a_bracketed_paste_with_escapes_parses_as_one_paste() -> None:
    parsed = list(XTermParser().feed(f"\x1b[200~{PASTED}\x1b[201~"))
    assert [type(event) for event in parsed] == [events.Paste]
    assert isinstance(parsed[0], events.Paste)
    assert parsed[0].text == PASTED
