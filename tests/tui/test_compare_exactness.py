"""The compare view's title says when lockstep is not exact on the model (its load's
self-check found a sequence beside others gets other logits than alone), and when the
weights are repacked (`--repack`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from backend.chat.protocol import ChatMessage
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend
from tests.helpers import HostApp, wait_done
from tui.compare.screen import NOT_EXACT_NOTE, CompareScreen

SEA = [ChatMessage("user", "tell me about the sea")]
COLUMNS = [SamplerSettings(temperature=0.0), SamplerSettings(temperature=1.0)]


@pytest.mark.anyio
@pytest.mark.parametrize(("invariant", "repack"), [(True, False), (False, True), (None, False)])
async def test_the_title_says_when_lockstep_is_not_exact(
    invariant: bool | None, repack: bool
) -> None:
    backend = FakeBackend()
    backend._info = replace(backend.info, batch_invariant=invariant, repack=repack)
    app = HostApp(lambda: CompareScreen(backend, SEA, COLUMNS, 5, max_tokens=6))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        title = str(screen.query_one("#compare-title").render())
    assert (NOT_EXACT_NOTE in title) == (invariant is False)
    assert ("weights repacked (--repack)" in title) == repack
