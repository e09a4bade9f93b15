"""`RowCompositor` writes to the terminal exactly what Textual's compositor writes.

On the chat screen mid-reply (tinted tokens, bars, status), the same changed regions
are rendered by both; the terminal bytes of each partial update must be equal: the
regions a token's redraw changes, and random ones over the whole screen.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from unittest.mock import patch

import pytest
from textual._compositor import Compositor
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from tests.fake_backend import FakeBackend
from tests.helpers import nth_reply_finished, type_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.reply_view import ReplyView
from tui.row_compositor import RowCompositor

pytestmark = pytest.mark.anyio


def both_updates(compositor: Compositor, regions: list[Region], console: object) -> tuple[str, str]:
    """The terminal output of rendering `regions` by RowCompositor and by Textual."""
    outputs = []
    for render in (RowCompositor.render_partial_update, Compositor.render_partial_update):
        compositor._dirty_regions.update(regions)
        update = render(compositor)
        assert update is not None
        outputs.append(update.render_segments(console))  # type: ignore[arg-type]
    return outputs[0], outputs[1]


@contextmanager
def rendering_counted() -> Iterator[list[str]]:
    """The class names of the widgets rendered meanwhile, in order."""
    rendered: list[str] = []
    render_lines = Widget.render_lines

    def counted(widget: Widget, crop: Region) -> list[Strip]:
        rendered.append(type(widget).__name__)
        return render_lines(widget, crop)

    with patch.object(Widget, "render_lines", counted):
        yield rendered


async def test_partial_updates_equal_textuals_on_the_chat_screen() -> None:
    backend = FakeBackend(pause_after_tokens=40, min_reply_tokens=60)
    app = SamplescopeApp(backend, max_tokens=60, cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        assert isinstance(app.screen._compositor, RowCompositor)
        app.chat_screen.action_toggle_colour()
        await type_message(pilot, app, "hello")
        await wait_until(pilot, backend.paused.is_set)
        await pilot.pause(0.3)
        compositor = app.screen._compositor
        view = app.query(ReplyView).last()
        reply_line = Region(view.region.x, view.region.y + 1, view.region.width, 1)
        token_redraw = [
            reply_line,
            app.query_one("#status").region,
            app.query_one("#probs").region,
        ]
        ours, textuals = both_updates(compositor, token_redraw, app.console)
        assert ours == textuals and len(ours) > 1000
        # Only what shows at the changed rows is rendered: not the containers behind.
        with rendering_counted() as rendered:
            compositor._dirty_regions.update(token_redraw)
            compositor.render_partial_update()
        assert {"ReplyView", "ChatProbs", "StatusLine"} <= set(rendered)
        assert not {"Screen", "ChatView", "Horizontal", "Vertical", "SamplingPanel"} & set(rendered)
        width, height = app.screen.size
        chosen = random.Random(7)
        for _ in range(40):
            regions = []
            for _ in range(chosen.randint(1, 4)):
                x, y = chosen.randrange(width), chosen.randrange(height)
                w, h = chosen.randint(1, width - x), chosen.randint(1, min(6, height - y))
                regions.append(Region(x, y, w, h))
            ours, textuals = both_updates(compositor, regions, app.console)
            assert ours == textuals, regions
        backend.resume.set()
        await nth_reply_finished(pilot, app)
