"""Snapshots of the grouped sampling panel, the chain-order editor and the cut labels.

Fixed sizes (120×36 and 80×24), the fake backend, no cursor blink, no clocks. The
probability panels show hand-made records, so that each case (XTC's head removal, a
typical-p set that is not the top rows, a logit-bias ban) is exactly the one named.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Collapsible

from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.records import CandidateTable, Step
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FAKE_VOCAB, FakeBackend
from tests.helpers import ALL_GROUPS, StepClock, chat_of, wait_until
from tui.app import SamplescopeApp
from tui.panel.chain_order import ChainOrder
from tui.panel.sampling_panel import SamplingPanel
from tui.widgets.prob_panel import ProbPanel

SIZES = [pytest.param((120, 36), id="120x36"), pytest.param((80, 24), id="80x24")]


def make_app() -> SamplescopeApp:
    """An app on the fake backend with fixed clocks and no cursor blink."""
    return SamplescopeApp(FakeBackend(clock=StepClock()), clock=StepClock(), cursor_blink=False)


@pytest.mark.sampling_groups(ALL_GROUPS)
@pytest.mark.parametrize("size", SIZES)
def test_grouped_panel(snap_compare: object, size: tuple[int, int]) -> None:
    app = make_app()

    async def ready(pilot: Pilot[object]) -> None:
        await wait_until(pilot, lambda: chat_of(app).ready)
        app.chat_screen.action_focus_sampling()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=ready)  # type: ignore[operator]


@pytest.mark.sampling_groups("core", "order")
@pytest.mark.parametrize("size", SIZES)
def test_order_editor(snap_compare: object, size: tuple[int, int]) -> None:
    app = make_app()

    async def edited(pilot: Pilot[object]) -> None:
        await wait_until(pilot, lambda: chat_of(app).ready)
        app.chat_screen.action_focus_sampling()  # on 80x24 the folded panels show
        panel = app.query_one(SamplingPanel)
        panel.open_group("order")
        group = panel.query_one("#group-order", Collapsible)
        chain = app.query_one(ChainOrder)
        # The group scrolls itself into view after the next refresh; focusing the editor
        # scrolls too (to centre it) when it is not all in view at that moment. Which
        # scroll comes last depends on timing, so focus it only once the group is laid
        # out and in view (then the focus does not scroll).
        await wait_until(
            pilot, lambda: chain.region.height > 0 and app.screen.can_view_entire(group)
        )
        await pilot.wait_for_scheduled_animations()
        chain.focus()
        await wait_until(pilot, lambda: app.focused is chain)
        await pilot.press(
            "down", "down", "shift+down", "down", "space"
        )  # top_n_sigma one down, typ_p off
        # the new order is the app's settings (and the panel shows them)
        await wait_until(pilot, lambda: app.live.current.order == chain.value)

    assert snap_compare(app, terminal_size=size, run_before=edited)  # type: ignore[operator]


def _step(
    settings: SamplerSettings,
    probs: list[float],
    kept: list[bool],
    removed_by: list[str],
    *,
    chosen: int,
    cut_by: str,
) -> Step:
    """A step over the first len(probs) fake tokens (ids 1, 2, ...)."""
    before = np.array(probs, dtype=np.float64)
    after = np.where(kept, before, 0.0)
    after = after / after.sum()
    table = CandidateTable(
        token_ids=np.arange(1, len(probs) + 1, dtype=np.intp),
        logits=np.log(before),
        prob_before=before,
        prob_after=after,
        kept=np.array(kept),
        removed_by=tuple(removed_by),
    )
    return Step(
        token_id=chosen,
        prob=float(after[chosen - 1]),
        draw=0.25,
        n_kept=sum(kept),
        cut_by=cut_by,
        entropy=float(-(before * np.log(before)).sum()),
        table=table,
        elapsed_us=10.0,
        settings=settings,
        temperature=settings.temperature,
    )


PROBS = [0.30, 0.20, 0.14, 0.10, 0.08, 0.06, 0.05, 0.04, 0.02, 0.01]

XTC = _step(
    SamplerSettings(temperature=0.8, min_p=0.05, xtc_probability=1.0, xtc_threshold=0.1),
    PROBS,
    [False, False, False, True, True, True, True, True, False, False],
    ["xtc", "xtc", "xtc", "", "", "", "", "", "min_p", "min_p"],
    chosen=5,
    cut_by="xtc",
)
TYPICAL = _step(
    SamplerSettings(typical_p=0.5),
    PROBS,
    [False, True, True, True, False, True, False, False, False, False],
    ["typ_p", "", "", "", "typ_p", "", "typ_p", "typ_p", "typ_p", "typ_p"],
    chosen=3,
    cut_by="typ_p",
)
BAN = _step(
    SamplerSettings(top_k=4, logit_bias=((2, -math.inf), (40, -math.inf))),
    PROBS,
    [True, False, True, True, True, False, False, False, False, False],
    ["", "logit_bias", "", "", "", "top_k", "top_k", "top_k", "top_k", "top_k"],
    chosen=1,
    cut_by="top_k",
)


class ProbHost(App[None]):
    """One probability panel filling the screen, showing one step."""

    CSS = "ProbPanel { height: 1fr; border: round $primary; padding: 0 1; }"

    def __init__(self, step: Step) -> None:
        super().__init__()
        self.step = step

    def compose(self) -> ComposeResult:
        yield ProbPanel()

    def on_mount(self) -> None:
        pieces = lambda token_id: FAKE_VOCAB[token_id] if token_id < len(FAKE_VOCAB) else "?"  # noqa: E731
        self.query_one(ProbPanel).show(self.step, "token 7", pieces)


@pytest.mark.parametrize(
    "step",
    [pytest.param(XTC, id="xtc"), pytest.param(TYPICAL, id="typical"), pytest.param(BAN, id="ban")],
)
@pytest.mark.parametrize("size", SIZES)
def test_cut_labels(snap_compare: object, step: Step, size: tuple[int, int]) -> None:
    assert snap_compare(ProbHost(step), terminal_size=size)  # type: ignore[operator]


def test_the_hand_made_records_are_valid_steps() -> None:
    for step in (XTC, TYPICAL, BAN):
        candidates = step.candidates
        assert sum(c.kept for c in candidates) == step.n_kept
        assert all((c.removed_by == "") == c.kept for c in candidates)
        assert math.isclose(sum(c.prob_after for c in candidates), 1.0)
    assert DEFAULT_CHAT_SETTINGS.order[0] == "penalties"
