"""One group of the sampling panel (`#group-NAME`): a collapsible whose controls are
built the first time it opens."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Collapsible


class SettingGroup(Collapsible):
    """A collapsible group of settings that builds its controls when it first opens.

    A collapsed group holds only its title: most groups stay closed, and building
    their controls (an input, a slider's parts) at each start costs more than all
    the rest of the panel. `build` makes them from the settings in force when the
    group opens, so they show those values.

    A collapsed group carries Collapsible's `-collapsed` class from the start: set on
    mount instead, it would restyle every control inside a second time.

    Args:
        group: The group's name (the widget's id is `group-NAME`).
        title: The group's title.
        build: Makes the group's controls (called once, when the group first opens).
        collapsed: Whether the group starts collapsed.
    """

    def __init__(
        self,
        group: str,
        title: str,
        build: Callable[[], list[Widget]],
        *,
        collapsed: bool = True,
    ) -> None:
        self._build = build
        self._composed = False
        self.built = False
        """Whether the controls exist (the group has been open)."""
        classes = "setting-group -collapsed" if collapsed else "setting-group"
        super().__init__(title=title, collapsed=collapsed, id=f"group-{group}", classes=classes)

    def compose(self) -> ComposeResult:
        if not self.collapsed:
            for control in self._controls():
                self.compose_add_child(control)
        self._composed = True
        yield from super().compose()

    def watch_collapsed(self, collapsed: bool) -> None:
        """Build the controls as the group opens (after its compose; before it, the
        compose builds them)."""
        if not collapsed and self._composed and not self.built:
            self.query_one(Collapsible.Contents).mount_all(self._controls())

    def _controls(self) -> list[Widget]:
        """The group's controls, made now (once)."""
        self.built = True
        return self._build()
