"""The sampling panel: a slider or toggle for each sampler setting."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical

from backend.chat.protocol import LiveSettings
from sampling.errors import SettingsError
from sampling.settings import MAX_SEED, SamplerSettings
from tui.screens.entry import ValueEntryScreen
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
    ("seed", "seed", 0, 99_999, 1, 1000, True, MAX_SEED),
)

_TOGGLES: tuple[tuple[str, str, tuple[tuple[object, str], ...]], ...] = (
    ("top_p_scope", "top-p scope", (("kept", "kept"), ("vocab", "vocab"))),
    ("temperature_last", "temperature", ((False, "first"), (True, "last"))),
    ("draw", "draw", (("inverse_cdf", "inverse cdf"), ("gumbel", "gumbel"))),
)


class SamplingPanel(Vertical):
    """Sliders and toggles for the live sampler settings.

    A change is validated and written to `live.current`, which the generating thread
    reads before every token: it applies from the next token, also mid-reply.

    Args:
        live: The settings shared with the generation.
    """

    def __init__(self, live: LiveSettings, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.live = live
        self._initial = live.current
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

    def apply(self, field: str, value: object) -> bool:
        """Make one setting live; an invalid value is refused with a notice (False)."""
        try:
            new = self.live.current.with_changes(**{field: value})
        except SettingsError as error:
            self.notify(str(error), severity="error")
            self.show(self.live.current)
            return False
        self.live.current = new
        self.show(new)
        return True

    @on(Slider.Changed)
    def _on_slider(self, event: Slider.Changed) -> None:
        event.stop()
        self.apply(event.slider.field, event.value)

    @on(Toggle.Changed)
    def _on_toggle(self, event: Toggle.Changed) -> None:
        event.stop()
        self.apply(event.toggle.field, event.value)

    @on(Slider.EditRequested)
    def _on_edit(self, event: Slider.EditRequested) -> None:
        event.stop()
        slider = event.slider
        kind = "an integer" if slider.integer else "a number"
        hint = f"{kind}; the bar spans {slider.format_value(slider.minimum)}"
        hint += f" to {slider.format_value(slider.maximum)}. Enter sets it, Esc cancels."

        def done(text: str | None) -> None:
            if not text:
                return
            try:
                value: float = int(text) if slider.integer else float(text)
            except ValueError:
                self.notify(f"{slider.label}: {text!r} is not {kind}", severity="error")
                return
            self.apply(slider.field, value)

        self.app.push_screen(ValueEntryScreen(slider.label, slider.format_value(), hint), done)

    def focus_first(self) -> None:
        """Focus the first control."""
        self.query(Slider).first().focus()
