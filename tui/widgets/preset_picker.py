"""A list of the presets to choose one from: Enter returns its name, Escape None."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from sampling.settings.record import SamplerSettings
from sampling.settings.summary import settings_summary


class PresetPickerScreen(ModalScreen[str | None]):
    """The presets, each with its settings in one line; Enter picks the highlighted one.

    Args:
        presets: The presets by name, in the order shown.
        title: What picking one does.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    PresetPickerScreen { align: center middle; }
    #preset-picker { width: 80%; height: 70%; border: round $accent; background: $surface;
                     padding: 0 1; }
    #preset-picker-title { height: auto; }
    #preset-list { height: 1fr; }
    """

    def __init__(self, presets: Mapping[str, SamplerSettings], title: str) -> None:
        super().__init__()
        self._names = list(presets)
        self._presets = dict(presets)
        self._title = title

    def compose(self) -> ComposeResult:
        with Vertical(id="preset-picker"):
            yield Static(Text(self._title, style="bold"), id="preset-picker-title")
            yield OptionList(
                *(
                    Option(
                        Text(name, style="bold")
                        + Text("\n  " + settings_summary(settings), style="grey70"),
                        id=str(index),
                    )
                    for index, (name, settings) in enumerate(self._presets.items())
                ),
                id="preset-list",
            )

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected, "#preset-list")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(self._names[int(event.option.id)])

    def action_cancel(self) -> None:
        self.dismiss(None)
