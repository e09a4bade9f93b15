"""The app's keys, shown in the footer.

Each binding has an id (its action's name) so that the config file's [keys] table
can move it (`App.set_keymap`).
"""

from __future__ import annotations

from textual.binding import Binding

APP_BINDINGS: tuple[Binding, ...] = (
    Binding("escape", "stop", "stop", id="stop"),
    Binding("ctrl+r", "regenerate", "regen", id="regenerate"),
    Binding("ctrl+n", "new_chat", "new chat", id="new_chat"),
    Binding("ctrl+o", "history", "chats", id="history"),
    Binding("ctrl+y", "copy_reply", "copy", id="copy_reply"),
    Binding("ctrl+g", "new_seed", "new seed", id="new_seed"),
    Binding("ctrl+l", "toggle_colour", "colour", id="toggle_colour"),
    Binding("ctrl+t", "token_cursor", "tokens", id="token_cursor"),
    # Letters: the message box takes them while it has focus. The token cursor's
    # footer shows `w`; `b` shows while what-if is on.
    Binding("w", "whatif", "what if", show=False, id="whatif"),
    Binding("b", "whatif_branch", "branch", id="whatif_branch"),
    # priority: over the input's ctrl+d
    Binding("ctrl+d", "compare", "compare", priority=True, id="compare"),
    Binding("f2", "focus_sampling", "sliders", id="focus_sampling"),
    Binding("f3", "focus_input", "input", show=False, id="focus_input"),
    Binding("f4", "plot('timeline')", "timeline", id="timeline"),
    Binding("f5", "plot('tail')", "tail", id="tail"),
    Binding("f6", "toggle_mode", "mode", id="toggle_mode"),
    Binding("f1", "help", "help", id="help"),
    # Textual's own ctrl+q has no id; this copy lets [keys] add a quit key.
    Binding("ctrl+q", "quit", "quit", show=False, priority=True, id="quit"),
)
