"""The sampling panel: a slider or toggle for each sampler setting, from `sampling.spec`."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget

from sampling.errors import SettingsError
from sampling.settings import SamplerSettings
from sampling.spec import DISPLAY_ORDER, SETTINGS_BY_NAME, SettingSpec
from tui.screens.entry import ValueEntryScreen
from tui.widgets.slider import Slider
from tui.widgets.toggle import Toggle


class SamplingPanel(Vertical):
    """Sliders (numbers) and toggles (choices, booleans) for the sampler settings.

    The panel never changes the settings itself: a control the user moves posts
    `SettingChanged` up, and whoever owns the settings validates the value and calls
    `show` with what is now in force (the old settings when the value is refused).

    Args:
        settings: The settings shown at the start.
    """

    class SettingChanged(Message):
        """The user asked for a new value of one setting (not validated yet).

        Attributes:
            field: The `SamplerSettings` field.
            value: The value asked for.
        """

        def __init__(self, field: str, value: object) -> None:
            super().__init__()
            self.field = field
            self.value = value

    def __init__(self, settings: SamplerSettings, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._initial = settings
        self.border_title = "sampling"

    def compose(self) -> ComposeResult:
        for spec in DISPLAY_ORDER:
            yield _control(spec, self._initial)

    def show(self, settings: SamplerSettings) -> None:
        """Show `settings` on every control."""
        for slider in self.query(Slider):
            slider.set_value(getattr(settings, slider.field))
        for toggle in self.query(Toggle):
            toggle.set_value(getattr(settings, toggle.field))

    @on(Slider.Changed)
    def _on_slider(self, event: Slider.Changed) -> None:
        event.stop()
        self.post_message(self.SettingChanged(event.slider.field, event.value))

    @on(Toggle.Changed)
    def _on_toggle(self, event: Toggle.Changed) -> None:
        event.stop()
        self.post_message(self.SettingChanged(event.toggle.field, event.value))

    @on(Slider.EditRequested)
    def _on_edit(self, event: Slider.EditRequested) -> None:
        event.stop()
        slider = event.slider
        spec = SETTINGS_BY_NAME[slider.field]
        kind = "an integer" if slider.integer else "a number"
        hint = f"{kind}; the bar spans {slider.format_value(slider.minimum)}"
        hint += f" to {slider.format_value(slider.maximum)}. Enter sets it, Esc cancels."

        def done(text: str | None) -> None:
            if not text:
                return
            try:
                value = spec.parse(text)
            except SettingsError:
                self.notify(f"{slider.label}: {text!r} is not {kind}", severity="error")
                return
            self.post_message(self.SettingChanged(slider.field, value))

        self.app.push_screen(ValueEntryScreen(slider.label, slider.format_value(), hint), done)

    def focus_first(self) -> None:
        """Focus the first control."""
        self.query(Slider).first().focus()


def _control(spec: SettingSpec, settings: SamplerSettings) -> Widget:
    """The control for one setting, showing its value in `settings`.

    A number gets a slider, a boolean or a choice a toggle.
    """
    value = getattr(settings, spec.name)
    if spec.slider is None:
        return Toggle(spec.name, spec.label, spec.choices, value)
    return Slider(
        spec.name,
        spec.label,
        minimum=spec.slider.soft_min,
        maximum=spec.slider.soft_max,
        step=spec.slider.fine,
        coarse=spec.slider.coarse,
        value=value,
        integer=spec.kind == "int",
        hard_minimum=spec.slider.hard_min,
        hard_maximum=spec.slider.hard_max,
    )
