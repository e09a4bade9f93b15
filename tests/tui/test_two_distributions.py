"""The two-distributions panel: a guided reply's steps show the reply's distribution,
the negative prompt's and the guided one side by side, with the tokens guidance raised
and lowered the most; a step without guidance hides the panel. The timeline plots how
far apart the two were at each token. (The fake backend, which decodes the negative
prompt beside the reply as the real loop does.)"""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import Sparkline

from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.samplers.guidance_report import step_divergence, token_figures
from tests.fake_backend import FakeBackend
from tests.helpers import StepClock, chat_of, send_message, wait_until
from tests.tui.test_tui_snapshots import SIZE, make_app
from tui.app import SamplescopeApp
from tui.chat.timeline import ReplyTimeline
from tui.chat.two_distributions import TOP_ROWS, TwoDistributions

WHOLE_CONTEXT = 1 << 20
"""The fake's logits depend on every token: the negative prompt's differ from the reply's."""
GUIDED = DEFAULT_CHAT_SETTINGS.with_changes(
    seed=3, guidance_scale=3.0, negative_prompt="tell me about the dog"
)


def panel_text(app: SamplescopeApp) -> str:
    content = chat_of(app).panel(TwoDistributions).content
    assert isinstance(content, Text)
    return content.plain


@pytest.mark.anyio
async def test_a_guided_step_shows_both_distributions_and_a_plain_one_hides_them() -> None:
    app = make_app(
        FakeBackend(clock=StepClock(), context_window=WHOLE_CONTEXT), max_tokens=16, settings=GUIDED
    )
    async with app.run_test(size=SIZE) as pilot:
        panel = chat_of(app).panel(TwoDistributions)
        assert not panel.display or not panel.shown  # nothing selected yet
        await send_message(pilot, app, "tell me about the cat")
        await wait_until(pilot, lambda: panel.shown)
        tokens = chat_of(app).conversation.replies[-1].tokens
        await pilot.press("ctrl+t", "left", "left")
        step = tokens[-3].step
        await wait_until(pilot, lambda: panel.selected.step is step)
        report = step.reports["guidance"]
        lines = panel_text(app).splitlines()
        assert lines[0].startswith("guidance ×3 · KL ")
        assert lines[1].split() == ["reply", "negative", "guided"]
        pieces = chat_of(app).pieces
        for row, line in enumerate(lines[2 : 2 + TOP_ROWS]):
            for name in ("cond", "uncond", "guided"):
                token, _ = token_figures(report, name)[row]
                assert pieces(token)[:4] in line
        raised = token_figures(report, "raised")[0]
        lowered = token_figures(report, "lowered")[0]
        change_line = lines[3 + TOP_ROWS]
        assert pieces(raised[0])[:4] in change_line and f"{raised[1] * 100:+.1f}%" in change_line
        assert f"{lowered[1] * 100:+.1f}%" in change_line
        await wait_until(pilot, lambda: panel.region.height > 0)  # in the panels' column

        # Guidance off: the next reply's steps have no second distribution to show.
        app.live.current = DEFAULT_CHAT_SETTINGS.with_changes(seed=3)
        await pilot.press("escape")
        await send_message(pilot, app, "and the dog")
        await wait_until(pilot, lambda: not panel.shown and not panel.region.height)
        # Back on a guided token: shown again.
        chat_of(app).select_token(0, 2)
        await wait_until(pilot, lambda: panel.shown and panel.selected.step is tokens[2].step)


def test_guided_step_snapshot(snap_compare: object) -> None:
    app = make_app(
        FakeBackend(clock=StepClock(), context_window=WHOLE_CONTEXT), max_tokens=16, settings=GUIDED
    )

    async def guided(pilot: Pilot[object]) -> None:
        await send_message(pilot, app, "tell me about the cat")
        await pilot.press("ctrl+t", "left", "left")
        tokens = chat_of(app).conversation.replies[-1].tokens
        panel = chat_of(app).panel(TwoDistributions)
        await wait_until(pilot, lambda: panel.selected.step is tokens[-3].step and panel.shown)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=guided)  # type: ignore[operator]


@pytest.mark.anyio
async def test_the_timeline_plots_how_far_apart_the_two_distributions_were() -> None:
    app = make_app(
        FakeBackend(clock=StepClock(), context_window=WHOLE_CONTEXT), max_tokens=16, settings=GUIDED
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f4")
        await send_message(pilot, app, "tell me about the cat")
        timeline = chat_of(app).panel(ReplyTimeline)
        series = app.query_one("#timeline-divergence", Sparkline)
        tokens = chat_of(app).conversation.replies[-1].tokens
        expected = [step_divergence(token.step.reports) for token in tokens]
        assert all(value is not None and value >= 0 for value in expected)
        await wait_until(pilot, lambda: timeline.has_class("-divergence") and series.region.height)
        # One token a column, spread over the same cells as the other rows.
        spread = len(list(series.data or ())) // len(tokens)
        assert spread >= 1 and list(series.data or ())[::spread] == expected
        assert f"D ≤{max(v or 0.0 for v in expected):.2f}" in str(timeline.border_title)

        # A plain reply has no divergence row.
        app.live.current = DEFAULT_CHAT_SETTINGS.with_changes(seed=3)
        await send_message(pilot, app, "and the dog")
        await wait_until(
            pilot, lambda: not timeline.has_class("-divergence") and not series.region.height
        )
        assert "D ≤" not in str(timeline.border_title)
