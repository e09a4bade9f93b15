"""The plots on the real default model: the deeper ranks steps record, the timeline."""

from __future__ import annotations

import numpy as np
import pytest

from backend.chat.events import TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.helpers import chat_of, nth_reply_finished, type_message
from tui.app import SamplescopeApp
from tui.chat.tail_plot import TAIL_RANKS, TailPlot
from tui.chat.timeline import ReplyTimeline

SETTINGS = DEFAULT_CHAT_SETTINGS.with_changes(top_k=0, top_p=0.9, min_p=0.0)
QUESTION = [ChatMessage("user", "Name three colours.")]


def test_steps_record_the_tail_only_when_asked(llama_backend: LlamaBackend) -> None:
    live = LiveSettings(SETTINGS)
    llama_backend.reset()
    plain = [
        e for e in llama_backend.generate(QUESTION, live, max_tokens=6) if isinstance(e, TokenEvent)
    ]
    assert plain and all(e.step.tail is None for e in plain)
    live.tail_ranks = TAIL_RANKS
    llama_backend.reset()
    events = [
        e for e in llama_backend.generate(QUESTION, live, max_tokens=6) if isinstance(e, TokenEvent)
    ]
    # The same seed and settings: the same tokens, with or without the tail.
    assert [e.step.token_id for e in events] == [e.step.token_id for e in plain]
    for event in events:
        step = event.step
        tail = step.tail
        assert tail is not None and tail.ranks == TAIL_RANKS
        assert np.all(np.diff(tail.prob_before) <= 0)
        np.testing.assert_allclose(tail.prob_before[:20], step.table.prob_before, rtol=1e-6)
        assert int(np.count_nonzero(tail.prob_after)) == min(step.n_kept, TAIL_RANKS)
        assert float(tail.prob_before.sum()) <= 1.0 + 1e-5


@pytest.mark.anyio
async def test_timeline_and_tail_on_the_real_model(llama_backend: LlamaBackend) -> None:
    llama_backend.reset()
    app = SamplescopeApp(llama_backend, settings=SETTINGS, max_tokens=16, cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("f4", "f5")
        await type_message(pilot, app, "Name three colours.")
        await nth_reply_finished(pilot, app)
        chat_of(app).flush_now()
        await pilot.pause()
        tokens = chat_of(app).conversation.replies[-1].tokens
        tail = app.query_one(TailPlot)
        assert tail.step is tokens[-1].step and tail.step.tail is not None
        timeline = app.query_one(ReplyTimeline)
        x = timeline.x_of(2)
        assert x is not None
        await pilot.click("#timeline-prob", offset=(x, 0))
        await pilot.pause()
        assert chat_of(app).cursor == (0, 2)
        assert tail.step is tokens[2].step
