"""A chat snapshot pinned to the sampling panel's core group (tests/tui/conftest.py)
does not change when a sampler is added: a plug-in's new group shows on the panel,
and not on the pinned screen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sampling.built_in import BUILT_IN_REGISTRY
from sampling.settings.registry import Registry
from tests.fake_backend import FakeBackend
from tests.helpers import PINNED_GROUPS, StepClock, chat_of, pin_sampling_groups, wait_until
from tests.registries import with_plugin
from tui.app import SamplescopeApp

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


async def screen(pinned: bool, registry: Registry = BUILT_IN_REGISTRY) -> str:
    """The empty chat's screen (SVG) with `registry`, its sampling panel pinned or whole."""
    app = SamplescopeApp(
        FakeBackend(clock=StepClock()), clock=StepClock(), cursor_blink=False, registry=registry
    )
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready)
        if pinned:
            await pin_sampling_groups(pilot, PINNED_GROUPS)
        # The screen as it settles: on a loaded machine a refresh may still be on its
        # way after one pause, so take it when two in a row agree.
        shot = ""
        for _ in range(50):
            await pilot.pause()
            latest = app.export_screenshot()
            if latest == shot:
                break
            shot = latest
        return shot


async def test_a_new_sampler_leaves_a_pinned_snapshot_as_it_was(tmp_path: Path) -> None:
    before, whole_before = await screen(pinned=True), await screen(pinned=False)
    page = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    found = re.search(r"```python\n(.*?)```", page, re.DOTALL)
    assert found is not None
    path = tmp_path / "top_h.py"
    path.write_text(found.group(1), encoding="utf-8")
    joined = with_plugin(path)
    after, whole_after = await screen(True, joined), await screen(False, joined)
    assert whole_after != whole_before  # the whole panel has one more group to scroll to
    assert after == before
