"""Textual's footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


class SteadyFooter(Footer):
    """A `Footer` that rebuilds its keys only when what it shows changes.

    Textual's footer rebuilds every key (a widget each) whenever the screen's bindings
    may have changed, i.e. at every focus move, though moving between controls that
    share their keys changes nothing it shows. This one compares what it would show
    (each binding, its key as displayed, whether it is enabled, its tooltip) with what
    it shows, and rebuilds only on a difference.
    """

    def __init__(self, *, compact: bool = False) -> None:
        super().__init__(compact=compact)
        self._shown: tuple[object, ...] | None = None

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if not (screen.app.app_focus and self.is_attached and screen is self.screen):
            super().bindings_changed(screen)  # no rebuild now: compare again next time
            self._shown = None
            return
        shown = tuple(
            (key, binding, screen.app.get_key_display(binding), enabled, tooltip)
            for key, (_, binding, enabled, tooltip) in screen.active_bindings.items()
        )
        if shown == self._shown:
            return
        self._shown = shown
        super().bindings_changed(screen)
