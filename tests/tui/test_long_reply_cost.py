"""The app's work per token does not grow with the reply (fake backend, 1,500 tokens).

Two counts, taken while the reply streams with every panel shown (tinted tokens,
probability bars, status line, the timeline with its kept row, the tail plot): how
many of the reply's tokens the views read (a view that rebuilds from the whole reply
at each redraw reads more and more per token), and how many characters the screen
sends to the terminal (a view that redraws the whole reply sends more and more).
Both are compared per token between a window early in the reply (the transcript
already full, so it scrolls) and one near its end, each of 450 tokens: the app
repaints a few times a second and a layout redraws the whole screen, so a shorter
window holds too few repaints to compare; the late one stops 20 tokens before the end,
whose redraw is once a reply, not per token. The fake generates a fixed number of
tokens per redraw, so the pace is the same however loaded the machine is.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from textual._compositor import CompositorUpdate
from textual.widgets import Input

from backend.chat.events import TokenEvent
from backend.chat.protocol import LiveSettings
from tests.fake_backend import FakeBackend
from tests.helpers import StepClock, chat_of
from tui.app import SamplescopeApp
from tui.chat.conversation import Conversation
from tui.chat.reply import Reply
from tui.chat.reply_job import ReplyJob
from tui.chat.view import ChatView

pytestmark = pytest.mark.anyio

LENGTH = 1500
EARLY = (300, 750)
LATE = (LENGTH - 470, LENGTH - 20)
ALLOWED_GROWTH = 1.3
PER_PAINT = 8


class PacedFake(FakeBackend):
    """A fake that samples `PER_PAINT` tokens per redraw of the app (`permits`)."""

    def __init__(self) -> None:
        super().__init__(token_delay=1.0, min_reply_tokens=LENGTH + 1, clock=StepClock())
        self.permits = threading.Semaphore(0)
        self.fake._sleep = self._paced  # type: ignore[method-assign]

    def _paced(self, seconds: float) -> None:
        """Wait for a permit instead of sleeping (the model's token delay)."""
        while seconds > 0 and not self.permits.acquire(timeout=0.05):
            cancel = self.fake.cancel
            if cancel is not None and cancel.is_set():
                return


class CountingTokens(list[TokenEvent]):
    """A reply's token list that counts the tokens read from it."""

    reads = 0

    def __iter__(self) -> Iterator[TokenEvent]:
        for token in super().__iter__():
            self.reads += 1
            yield token

    def __getitem__(self, index: Any) -> Any:
        got = super().__getitem__(index)
        self.reads += len(got) if isinstance(index, slice) else 1
        return got


def per_token(samples: list[tuple[int, int, int]], window: tuple[int, int], at: int) -> float:
    """Count `at` of the samples (tokens, reads, characters) per token over `window`."""
    inside = [s for s in samples if window[0] <= s[0] <= window[1]]
    first, last = inside[0], inside[-1]
    assert last[0] - first[0] >= (window[1] - window[0]) // 2, "too few redraws sampled"
    return (last[at] - first[at]) / (last[0] - first[0])


@pytest.mark.slow
async def test_work_per_token_does_not_grow_with_the_reply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tokens = CountingTokens()
    begin = Conversation.begin_reply

    def counted_reply(
        self: Conversation, live: LiveSettings, max_tokens: int
    ) -> tuple[Reply, ReplyJob]:
        reply, job = begin(self, live, max_tokens)
        reply.tokens = tokens
        return reply, job

    monkeypatch.setattr(Conversation, "begin_reply", counted_reply)
    fake = PacedFake()
    app = SamplescopeApp(fake, max_tokens=LENGTH, clock=StepClock(), cursor_blink=False)
    sent = [0]
    display = app._display

    def counting_display(screen: Any, renderable: Any) -> None:
        if isinstance(renderable, CompositorUpdate):
            sent[0] += len(renderable.render_segments(app.console))
        display(screen, renderable)

    monkeypatch.setattr(app, "_display", counting_display)
    samples: list[tuple[int, int, int]] = []
    paint = ChatView.paint

    def sampled_paint(self: ChatView) -> None:
        paint(self)
        if self.generating:
            samples.append((len(tokens), tokens.reads, sent[0]))
            fake.permits.release(PER_PAINT)

    monkeypatch.setattr(ChatView, "paint", sampled_paint)
    async with app.run_test(size=(120, 40)) as pilot:
        while not chat_of(app).ready:
            await pilot.pause(0.02)
        app.chat_screen.action_toggle_colour()
        for plot in ("timeline", "timeline", "tail"):
            app.chat_screen.action_plot(plot)
        prompt = app.query_one("#prompt", Input)
        prompt.value = "tell me a long story"
        await prompt.action_submit()
        while not chat_of(app).conversation.finished:
            await pilot.pause(0.05)
    assert len(tokens) == LENGTH
    for at, what in ((1, "tokens read"), (2, "characters sent")):
        early, late = per_token(samples, EARLY, at), per_token(samples, LATE, at)
        assert late <= early * ALLOWED_GROWTH + 1, f"{what} per token: {early:.1f} -> {late:.1f}"
