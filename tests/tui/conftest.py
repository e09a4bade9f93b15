"""Snapshots of the chat show only the sampling panel's groups they are about.

Every `snap_compare` here pins the sampling panel to its core group, unless the test
names others (`@pytest.mark.sampling_groups("core", "grammar")`) or all of them
(`@pytest.mark.sampling_groups(ALL_GROUPS)`): a new sampler (a new group) then changes
the snapshots about the panel, not every snapshot of the chat.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.helpers import PINNED_GROUPS, pin_sampling_groups

RunBefore = Callable[[Pilot[Any]], Awaitable[None] | None]


async def settled(pilot: Pilot[Any]) -> None:
    """Wait until two screenshots in a row agree: on a loaded machine a refresh (a
    group hidden, a scroll into view) may still be on its way after one pause."""
    shot = ""
    for _ in range(50):
        await pilot.pause()
        latest = pilot.app.export_screenshot()
        if latest == shot:
            return
        shot = latest


@pytest.fixture
def snap_compare(snap_compare: Callable[..., bool], request: pytest.FixtureRequest) -> Any:
    """`snap_compare`, with the sampling panel pinned to the groups the test is about,
    taken once the screen has settled."""
    marker = request.node.get_closest_marker("sampling_groups")
    groups = tuple(marker.args) if marker is not None else PINNED_GROUPS

    def compare(app: Any, *args: Any, run_before: RunBefore | None = None, **kwargs: Any) -> bool:
        async def pinned(pilot: Pilot[Any]) -> None:
            await pin_sampling_groups(pilot, groups)
            if run_before is not None:
                done = run_before(pilot)
                if inspect.isawaitable(done):
                    await done
            await settled(pilot)

        return snap_compare(app, *args, run_before=pinned, **kwargs)

    return compare
