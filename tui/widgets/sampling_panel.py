"""The sampling panel: a slider or toggle for each sampler setting."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical

from sampling.settings import MAX_SEED, SamplerSettings
from tui.widgets.slider import Slider
from tui.widgets.toggle import Toggle

# field, label, minimum, maximum, fine step, coarse step, integer, hard maximum
_SLIDERS: tuple[tuple[str, str, float, float, float, float, bool, float | None], ...] = (
    ("temperature", "temperature", 0.0, 2.0, 0.01, 0.1, False, 100.0),
    ("top_k", "top-k", 0, 100, 1, 10, True, 1_000_000),
    ("top_p", "top-p", 0.01, 1.0, 0.01, 0.05, False, None),
    ("min_p", "min-p", 0.0, 0.99, 0.01, 0.05, False, None),
    ("repeat_penalty", "rep. penalty", 0.5, 2.0, 0.01, 0.1, False, 10.0),
    ("repeat_last_n", "rep. last-n", 0, 512, 1, 16, True, 1_000_000),
    ("seed", "seed", 0, 9999, 1, 100, True, MAX_SEED),
)

_TOGGLES: tuple[tuple[str, str, tuple[tuple[object, str], ...]], ...] = (
    ("top_p_scope", "top-p scope", (("kept", "kept"), ("vocab", "vocab"))),
    ("temperature_last", "temperature", ((False, "first"), (True, "last"))),
    ("draw", "draw", (("inverse_cdf", "inverse cdf"), ("gumbel", "gumbel"))),
)

SLIDER_FIELDS = tuple(row[0] for row in _SLIDERS)
TOGGLE_FIELDS = tuple(row[0] for row in _TOGGLES)


class SamplingPanel(Vertical):
    """Sliders and toggles for the live sampler settings.

    The controls post `Slider.Changed` / `Toggle.Changed`; the app validates the new
    value and calls `show` with the settings now in force.
    """

    def __init__(self, settings: SamplerSettings, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._initial = settings
        self.border_title = "sampling"

    def compose(self) -> ComposeResult:
        for field, label, lo, hi, fine, coarse, integer, hard in _SLIDERS:
            yield Slider(
                field,
                label,
                minimum=lo,
                maximum=hi,
                step=fine,
                coarse=coarse,
                value=getattr(self._initial, field),
                integer=integer,
                hard_maximum=hard,
            )
        for field, label, choices in _TOGGLES:
            yield Toggle(field, label, choices, getattr(self._initial, field))

    def show(self, settings: SamplerSettings) -> None:
        """Show `settings` on every control."""
        for slider in self.query(Slider):
            slider.set_value(getattr(settings, slider.field))
        for toggle in self.query(Toggle):
            toggle.set_value(getattr(settings, toggle.field))

    def focus_first(self) -> None:
        """Focus the first control."""
        self.query(Slider).first().focus()
