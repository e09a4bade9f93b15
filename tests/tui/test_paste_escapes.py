"""Pasting text that contains terminal escape sequences into the prompt."""

from __future__ import annotations

import sys
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textual import events
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver
from textual.widgets import Input

from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, wait_until
from tests.hypothesis_profiles import examples
from tui.app import SamplescopeApp
from tui.paste_driver import PasteSafeLinuxDriver, PasteSafeParser

PASTED = "abc\x1b[31mred\x1b[0m"


@pytest.mark.anyio
async def test_a_paste_event_reaches_the_prompt_whole() -> None:
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
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
        "as a Paste. samplescope reads the terminal with PasteSafeParser instead; when "
        "this passes, Textual has fixed it and tui/paste_driver.py can go"
    ),
)
def test_a_bracketed_paste_with_escapes_parses_as_one_paste() -> None:
    parsed = list(XTermParser().feed(f"\x1b[200~{PASTED}\x1b[201~"))
    assert [type(event) for event in parsed] == [events.Paste]
    assert isinstance(parsed[0], events.Paste)
    assert parsed[0].text == PASTED


WHOLE = f"x\x1b[200~{PASTED}\nline 2\x1b[201~y\x1b[Az"
# Where a read may split the input: anywhere but after the first one or two characters
# of the start marker, which the parser cannot tell from an Escape key press.
SPLITS = [i for i in range(1, len(WHOLE)) if i not in (2, 3)]


@settings(max_examples=examples(200), deadline=None)
@given(cuts=st.lists(st.sampled_from(SPLITS), unique=True, max_size=8))
def test_samplescopes_parser_keeps_the_paste_whole_however_the_reads_split_it(
    cuts: list[int],
) -> None:
    edges = [0, *sorted(cuts), len(WHOLE)]
    parser = PasteSafeParser()
    parsed = [event for a, b in pairwise(edges) for event in parser.feed(WHOLE[a:b])]
    pastes = [event.text for event in parsed if isinstance(event, events.Paste)]
    keys = [event.key for event in parsed if isinstance(event, events.Key)]
    assert pastes == [f"{PASTED}\nline 2"]
    assert keys == ["x", "y", "up", "z"]


def test_a_lone_escape_key_is_not_held_back() -> None:
    parser = PasteSafeParser()
    assert parser.hide_escapes("\x1b") == "\x1b"
    assert parser.hide_escapes("a\x1b[") == "a\x1b["


def test_the_app_reads_the_terminal_with_samplescopes_parser() -> None:
    app = SamplescopeApp(FakeBackend())
    if sys.platform != "win32":
        assert app.driver_class is PasteSafeLinuxDriver
    loop = PasteSafeLinuxDriver.run_input_thread
    assert loop.__code__ is LinuxDriver.run_input_thread.__code__
    assert loop.__globals__["XTermParser"] is PasteSafeParser
