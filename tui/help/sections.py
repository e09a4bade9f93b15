"""What the help lists: the app-wide keys, then each screen's with those of the widgets
its keys come from, read from their bindings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual.app import App
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.screen import Screen

from tui.chat.screen import ChatScreen
from tui.chat.transcript import Transcript
from tui.compare.column import CompareColumnView
from tui.compare.edit import CompareEditScreen
from tui.compare.screen import CompareScreen
from tui.explore.screen import ExploreScreen
from tui.help.screen import binding_rows
from tui.history.screen import HistoryScreen
from tui.loops.why_screen import LoopWhyScreen
from tui.panel.chain_order import ChainOrder
from tui.panel.slider import Slider
from tui.panel.toggle import Toggle
from tui.score.screen import ScoreScreen
from tui.sweep.screen import SweepScreen


def own_bindings(*nodes: type[DOMNode]) -> list[BindingType]:
    """The bindings each of `nodes` declares (not those it inherits from Textual's
    classes: the help lists the screens' shared keys once, under "everywhere")."""
    return [binding for node in nodes for binding in node.__dict__.get("BINDINGS", [])]


SCREENS: tuple[tuple[str, Sequence[BindingType]], ...] = (
    ("chat", own_bindings(ChatScreen)),
    ("chat: token cursor (ctrl+t)", own_bindings(Transcript)),
    ("chat: sampling panel (f2)", own_bindings(Slider, Toggle, ChainOrder)),
    (
        "compare (ctrl+d)",
        own_bindings(CompareScreen, CompareColumnView, CompareEditScreen),
    ),
    ("explore (x on a token)", own_bindings(ExploreScreen)),
    ("score a text (f8)", own_bindings(ScoreScreen)),
    ("saved chats (ctrl+o)", own_bindings(HistoryScreen)),
    ("sweep (samplescope sweep --view)", own_bindings(SweepScreen)),
    ("loop (f9)", own_bindings(LoopWhyScreen)),
)
"""Each screen the help lists: its title and the bindings it has."""


def key_sections(
    app_wide: Sequence[BindingType], keymap: Mapping[str, str]
) -> list[tuple[str, list[tuple[str, str]]]]:
    """(title, rows of (keys, what it does)): the app-wide bindings `app_wide` with the
    command palette and every screen's shared keys, then each screen of `SCREENS`."""
    palette = Binding(App.COMMAND_PALETTE_BINDING, "command_palette", "command palette")
    shared = [binding for _, binding in Screen._merge_bindings()]  # tab, shift+tab, copy
    everywhere = binding_rows([palette, *app_wide, *shared], keymap)
    return [("everywhere", everywhere)] + [
        (title, binding_rows(bindings, keymap)) for title, bindings in SCREENS
    ]
