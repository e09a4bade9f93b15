"""The sampling panel: a control for each sampler setting, in groups (from
`sampling.settings.registry.Registry.settings`)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Collapsible

from backend.session.loop_watch import LoopGuard
from backend.session.phrase_bans import PhraseBans
from sampling.errors import SettingsError
from sampling.samplers.control_strength import CONTROL_GROUP
from sampling.samplers.temperature import TemperatureParams
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import registry_of
from sampling.settings.spec import SettingSpec
from tui.panel.beam_controls import BEAM_FIELDS, BeamControls
from tui.panel.chain_order import ChainOrder
from tui.panel.loop_controls import LOOP_FIELDS, LoopControls, loops_title
from tui.panel.phrase_bans import BAN_FIELDS, PhraseBanControls
from tui.panel.setting_controls import (
    CORE_GROUP,
    control_for,
    group_is_on,
    group_specs,
    group_title,
    setting_text,
)
from tui.panel.setting_group import SettingGroup
from tui.panel.settings_actions import SettingsActions
from tui.panel.slider import Slider
from tui.panel.text_setting import TextSetting
from tui.panel.toggle import Toggle

Control = Slider | Toggle | ChainOrder | TextSetting


class SamplingPanel(Vertical):
    """Sliders, toggles, text inputs and the chain's order, one collapsible group each.

    The groups come from `SettingSpec.group`; the core group starts open, and the
    others build their controls when they first open (`SettingGroup`), from the
    settings shown then: code that reaches a control opens its group first. The panel
    never changes the settings itself: a control the user moves posts
    `SettingChanged` up, and whoever owns the settings validates the value and calls
    `show` with what is now in force (the old settings when the value is refused).

    Args:
        settings: The settings shown at the start.
    """

    class SettingChanged(Message):
        """The user asked for a new value of one setting (not validated yet).

        A text setting's value is the text as typed (the owner reads it: a token's
        text is the model tokenizer's business).

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
        self._shown = settings
        self.registry = registry_of(settings)
        """The settings it shows and their groups (the app's registry)."""
        self.border_title = "sampling"

    def compose(self) -> ComposeResult:
        for group, specs in group_specs(self.registry):
            title = group_title(group, group_is_on(group, self._shown), self._shown)
            setting_group = SettingGroup(
                group, title, partial(self._controls_for, specs), collapsed=group != CORE_GROUP
            )
            setting_group.display = group != CONTROL_GROUP  # until a steered model loads
            yield setting_group
        yield _group("phrase-bans", "phrase bans", PhraseBanControls(PhraseBans()))
        yield _group("loops", loops_title(LoopGuard()), LoopControls())
        yield _group("beam-search", "beam search", BeamControls())
        yield _group("settings-actions", "reset · presets", SettingsActions())

    def _controls_for(self, specs: list[SettingSpec]) -> list[Widget]:
        """The controls of one group's settings, showing the settings shown now (a
        group builds them as it first opens)."""
        return [control_for(spec, self._shown) for spec in specs]

    def controls(self) -> Iterator[Control]:
        """Every setting's control built so far (the open groups' and those opened
        before), group by group."""
        for widget in self.query("Slider, Toggle, ChainOrder, TextSetting"):
            if not isinstance(widget, Slider | Toggle | ChainOrder | TextSetting):
                continue
            if widget.field not in BAN_FIELDS + BEAM_FIELDS + LOOP_FIELDS:  # not settings
                yield widget

    def show(self, settings: SamplerSettings) -> None:
        """Show `settings` on every control and group title."""
        self._shown = settings
        for control in self.controls():
            if isinstance(control, ChainOrder):
                control.set_value(settings.order)
            elif isinstance(control, TextSetting):
                spec = self.registry.settings_by_name[control.field]
                control.set_value(setting_text(spec, getattr(settings, spec.name)))
            else:
                control.set_value(getattr(settings, control.field))
        for group, _ in group_specs(self.registry):
            collapsible = self.query_one(f"#group-{group}", Collapsible)
            collapsible.title = group_title(group, group_is_on(group, settings), settings)

    def show_steering(self, steered: bool) -> None:
        """Show the control vectors' group only while the model has a control vector
        (`--control-vector`): without one its strength changes nothing."""
        for group in self.query(f"#group-{CONTROL_GROUP}").results(Collapsible):
            group.display = steered

    def show_bans(self, bans: PhraseBans) -> None:
        """Show the phrase bans in force (the group's title says how many)."""
        self.query_one(PhraseBanControls).show(bans)
        title = f"phrase bans · {len(bans.phrases)}" if bans else "phrase bans"
        self.query_one("#group-phrase-bans", Collapsible).title = title

    def show_loops(self, guard: LoopGuard) -> None:
        """Show the loop watch in force (the group's title says what it does)."""
        self.query_one(LoopControls).show(guard)
        self.query_one("#group-loops", Collapsible).title = loops_title(guard)

    def show_beams(self, width: int, length_penalty: float) -> None:
        """Say on the group's title whether replies are beam searches."""
        title = f"beam search · {width} beams" if width else "beam search"
        if width and length_penalty:
            title += f" · length pen. {length_penalty:g}"
        self.query_one("#group-beam-search", Collapsible).title = title

    def open_group(self, group: str) -> None:
        """Expand one group (and leave the others as they are)."""
        self.query_one(f"#group-{group}", Collapsible).collapsed = False

    @on(Slider.Changed)
    def _on_slider(self, event: Slider.Changed) -> None:
        event.stop()
        self.post_message(self.SettingChanged(event.slider.field, event.value))

    @on(Toggle.Changed)
    def _on_toggle(self, event: Toggle.Changed) -> None:
        event.stop()
        self.post_message(self.SettingChanged(event.toggle.field, event.value))

    @on(ChainOrder.Changed)
    def _on_order(self, event: ChainOrder.Changed) -> None:
        """Ask for the order; first for the `temperature_last` it needs to run as shown.

        `temperature_last` on runs the temperature last whatever the order (see
        `SamplerSettings.order`), so an order with the temperature elsewhere switches it off.
        """
        event.stop()
        order = event.order
        wanted = _temperature_last_for(order)
        if wanted is not None and wanted != self._shown.of(TemperatureParams).temperature_last:
            self.post_message(self.SettingChanged("temperature_last", wanted))
        self.post_message(self.SettingChanged(event.chain.field, order))

    @on(TextSetting.Changed)
    def _on_text(self, event: TextSetting.Changed) -> None:
        event.stop()
        self.post_message(self.SettingChanged(event.setting.field, event.value))

    @on(Slider.Typed)
    def _on_typed(self, event: Slider.Typed) -> None:
        event.stop()
        slider = event.slider
        try:
            value = self.registry.settings_by_name[slider.field].parse(event.text)
        except SettingsError:
            kind = "an integer" if slider.integer else "a number"
            self.notify(f"{slider.label}: {event.text!r} is not {kind}", severity="error")
            return
        self.post_message(self.SettingChanged(slider.field, value))

    def focus_first(self) -> None:
        """Focus the first control (at once: the next key goes to it)."""
        self.screen.set_focus(self.query(Slider).first())

    @on(events.DescendantFocus)
    @on(events.DescendantBlur)
    def _mark_focus_within(self) -> None:
        """Class `-focus-within` while a control of the panel has the focus (its
        border lights up).

        A class set as the focus enters or leaves, not CSS's `:focus-within`: Textual
        restyles the whole subtree of a node with a `:focus-within` rule at every focus
        move inside it, i.e. every control of the panel at each tab.
        """
        self.set_class(self.has_focus_within, "-focus-within")


def _group(group: str, title: str, *controls: Widget) -> Collapsible:
    """One group of the panel other than the settings' (`#group-NAME`), collapsed, its
    controls built at once.

    It carries Collapsible's `-collapsed` class from the start: set on mount instead,
    it would restyle every control inside a second time.
    """
    classes = "setting-group -collapsed"
    return Collapsible(*controls, title=title, collapsed=True, id=f"group-{group}", classes=classes)


def _temperature_last_for(order: tuple[str, ...]) -> bool | None:
    """The `temperature_last` under which `order` runs as given (None: either does)."""
    if "temperature" in order and order[-1] != "temperature":
        return False  # with it on, the temperature would run last
    return None
