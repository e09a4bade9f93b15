"""The token cursor keeps its token in view: in a reply taller than the chat pane,
End, Home, ← → and [ ] scroll to the selected token's line, not to the reply's top."""

from __future__ import annotations

import math

import pytest

from tests.helpers import chat_of, press_at_once, wait_until
from tests.tui.test_navigation import HOT
from tests.tui.test_tui_snapshots import fake_backend, make_app, send
from tui.app import SamplescopeApp
from tui.chat.reply_view import ReplyView
from tui.chat.transcript import Transcript

pytestmark = pytest.mark.anyio

SIZE = (120, 30)
# The end token banned: the reply runs to max_tokens, many times the pane's height.
LONG = HOT.with_changes(logit_bias=((0, -math.inf),))


def token_in_view(app: SamplescopeApp) -> bool:
    """Whether the selected token's line is inside the transcript's visible rows."""
    transcript = app.query_one(Transcript)
    cursor = transcript.cursor
    assert cursor is not None
    view = transcript.views[cursor[0]]
    y = view.virtual_region.y + view.line_of(cursor[1])
    top = transcript.scroll_offset.y
    return top <= y < top + transcript.scrollable_content_region.height


@pytest.mark.slow
async def test_the_selected_token_is_always_in_view() -> None:
    app = make_app(fake_backend(), max_tokens=900, settings=LONG)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hello cat")
        await wait_until(pilot, lambda: bool(chat_of(app).conversation.finished))
        chat_of(app).flush_now()
        await pilot.pause()
        transcript = app.query_one(Transcript)
        view = transcript.query_one(ReplyView)
        assert view.size.height > 2 * transcript.scrollable_content_region.height
        await pilot.press("ctrl+t", "home")  # the first token: the reply's top
        await pilot.pause()
        assert chat_of(app).cursor == (0, 0) and token_in_view(app)
        await pilot.press("end")  # the last token, at the reply's bottom
        await pilot.pause()
        last = len(chat_of(app).conversation.replies[0].tokens) - 1
        assert chat_of(app).cursor == (0, last) and token_in_view(app)
        await pilot.press("home", "right_square_bracket")  # a surprising token, far down
        await pilot.pause()
        cursor = chat_of(app).cursor
        assert cursor is not None and cursor[1] > 0 and token_in_view(app)
        await press_at_once(pilot, "end", *["left"] * 300)  # ← walks up line by line
        await pilot.pause()
        assert chat_of(app).cursor == (0, last - 300) and token_in_view(app)
