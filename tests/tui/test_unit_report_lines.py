"""The probability panel shows what each unit reported of the step, a line each, in
the unit's words: mirostat's μ, and an unknown unit's figures by name."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from textual.app import App, ComposeResult

from sampling.sampler import Sampler
from sampling.samplers.guidance_report import token_figures
from sampling.settings.record import SamplerSettings
from tui.widgets.prob_panel import ProbPanel


class PanelApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ProbPanel()


@pytest.mark.anyio
async def test_each_report_is_a_line_in_the_units_words() -> None:
    settings = SamplerSettings(mirostat=2, mirostat_tau=3.0, seed=1)
    step = Sampler(settings, n_candidates=6).sample(np.linspace(3.0, -3.0, 32))
    step = replace(step, reports={**step.reports, "gone": {"count": 2}})
    app = PanelApp()
    async with app.run_test(size=(80, 30)) as pilot:
        panel = app.query_one(ProbPanel)
        panel.show(step, "reply 1 token 1", lambda token: f"<{token}>")
        await pilot.pause()
        lines = ["".join(part for part, _ in line) for line in panel._lines()]
    assert "mirostat 2 μ 6.00" in lines
    assert "gone count 2" in lines
    assert not any("μ" in line for line in lines if line.startswith("H "))


@pytest.mark.anyio
async def test_guidance_line_names_its_tokens_by_their_text_taken_literally() -> None:
    rng = np.random.default_rng(5)
    cond, uncond = rng.normal(0.0, 3.0, 40), rng.normal(0.0, 3.0, 40)
    step = Sampler(SamplerSettings(temperature=0.0, guidance_scale=3.0)).sample(cond, second=uncond)
    report = step.reports["guidance"]
    raised = token_figures(report, "raised")[0][0]
    lowered = token_figures(report, "lowered")[0][0]
    app = PanelApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(ProbPanel)
        panel.show(step, "reply 1 token 1", lambda token: f"[bold]w{token}")
        await pilot.pause()
        lines = ["".join(part for part, _ in line) for line in panel._lines()]
        shown = [line for line in lines if line.startswith("guidance ×3")]
        assert len(shown) == 1 and f"↑ [bold]w{raised} +" in shown[0]
        assert f"↓ [bold]w{lowered} -" in shown[0] and "#" not in shown[0]
        # Drawn from segments, never parsed as markup: the brackets reach the screen.
        row = next(i for i, line in enumerate(lines) if line.startswith("guidance ×3"))
        assert "[bold]w" in panel.render_line(row).text
