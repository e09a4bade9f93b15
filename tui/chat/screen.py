"""The chat's screen: the chat view, its footer, and the chat's keys and their actions.

Its keys are live only while it is the screen on top: a screen pushed over it (compare,
saved chats, score, …) has its own keys, and the chat's cannot reach the conversation
behind it. The app-wide state (the runner, the live settings, the store) stays on the
app, which this screen reaches as its host (`ChatHost`).
"""

from __future__ import annotations

import secrets
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType

from backend.session.sweep_result import SweepResult
from tui.chat.explore import open_explore
from tui.chat.host import ChatHost
from tui.chat.keys import CHAT_BINDINGS
from tui.chat.loop_escape import open_loop_why
from tui.chat.mode_switch import switch_mode
from tui.chat.steering import regenerate
from tui.chat.view import ChatView
from tui.compare.command import open_compare
from tui.history.screen import HistoryChoice, HistoryScreen
from tui.row_compositor import use_row_compositor
from tui.score.screen import ScoreScreen
from tui.styled_once import StyledOnceScreen
from tui.widgets.steady_footer import SteadyFooter

NEW_SEED_RANGE = 100_000
PANELS_WIDTH = 52
"""The panels' column (chat.tcss `#right`)."""
FOLD_BELOW = 2 * PANELS_WIDTH
"""Narrower than this, the panels fold: beside them the chat would get less than half."""


class ChatScreen(StyledOnceScreen[None]):
    """The chat: its view and footer, drawn by a `RowCompositor` (a token redraws its
    rows only), and the chat's keys.

    Args:
        chat: The chat view (the app builds it: it shares the app's runner and settings).
        host: The app: its runner, live settings, store and model picker.
    """

    BINDINGS: ClassVar[list[BindingType]] = list(CHAT_BINDINGS)
    # "-narrow": the panels fold; "-panels" (f10) shows them over the chat (chat.tcss).
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [  # type: ignore[misc]
        (0, "-narrow"),
        (FOLD_BELOW, "-wide"),
    ]

    def __init__(self, chat: ChatView, host: ChatHost) -> None:
        super().__init__()
        self.chat = chat
        self.host = host
        use_row_compositor(self)
        self._start_breakpoints()

    def _start_breakpoints(self) -> None:
        """Take the breakpoints' classes (`-wide`, `-tall`, …) for the terminal's size
        now: left to the first resize, they would restyle the whole screen once more
        as the app starts (a resize still sets them as Textual does)."""
        width, height = self.app.size
        app = self.app
        for dimension, breakpoints in (
            (
                width,
                app.HORIZONTAL_BREAKPOINTS
                if self.HORIZONTAL_BREAKPOINTS is None
                else self.HORIZONTAL_BREAKPOINTS,
            ),
            (
                height,
                app.VERTICAL_BREAKPOINTS
                if self.VERTICAL_BREAKPOINTS is None
                else self.VERTICAL_BREAKPOINTS,
            ),
        ):
            reached = [(at, name) for at, name in breakpoints or () if dimension >= at]
            if reached:
                self.add_class(max(reached)[1], update=False)

    def compose(self) -> ComposeResult:
        yield self.chat
        yield SteadyFooter(compact=True)

    def on_mount(self) -> None:
        self.host.chat_mounted()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`b` and `y` (branch from what-if, its command) only while what-if is on,
        f10 (the panels) only on a narrow terminal, the thinking key once a reply has a
        thinking (the footer shows them then)."""
        if action in ("whatif_branch", "whatif_command"):
            return self.chat.whatif.active
        if action == "toggle_panels":
            return self.folded
        if action == "toggle_thinking":
            return self.chat.has_thinking
        return True

    @property
    def folded(self) -> bool:
        """Whether the terminal is too narrow for the panels beside the chat."""
        return self.has_class("-narrow")

    def on_resize(self) -> None:
        self.refresh_bindings()  # f10 shows on a narrow terminal only

    def _refused(self) -> bool:
        """Whether no job can start now (a model is loading): says why."""
        why = self.host.runner.unavailable()
        if why is not None:
            self.notify(why)
        return why is not None

    # -- actions -----------------------------------------------------------------

    def action_stop(self) -> None:
        """Esc: stop the reply, else leave what-if, else leave the token cursor."""
        if not self.chat.stop() and not self.chat.whatif.leave():
            self.chat.leave_token_cursor()

    def action_regenerate(self) -> None:
        """Redo the last reply with the seed it had (a new branch of it)."""
        replies = self.chat.conversation.replies
        if self._refused() or not replies or self.chat.stop_then(self.action_regenerate):
            return
        self.host.apply_setting("seed", replies[-1].seed)
        regenerate(self.chat)

    def action_new_chat(self) -> None:
        """Forget the conversation (the backend's cache is reset before the next reply)."""
        if not self.chat.stop_then(self.action_new_chat):
            self.chat.new_chat()

    def action_history(self) -> None:
        """Show the saved chats; the one picked becomes the conversation."""
        host = self.host
        if host.store is None:
            self.notify("Chats are not being saved (--no-save, or the database failed).")
            return

        def opened(choice: HistoryChoice) -> None:
            if isinstance(choice, SweepResult):
                host.open_sweep(choice)
            else:
                host.open_saved_chat(choice)

        self.app.push_screen(HistoryScreen(host.store), opened)

    def action_copy_reply(self) -> None:
        """Copy the selected reply (token cursor), else the last one."""
        replies = self.chat.conversation.replies
        if not replies:
            return
        cursor = self.chat.cursor
        number = cursor[0] if cursor is not None else len(replies) - 1
        text = replies[number].text
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied reply {number + 1} ({len(text)} characters).")

    def action_new_seed(self) -> None:
        """Pick a random seed."""
        self.host.apply_setting("seed", secrets.randbelow(NEW_SEED_RANGE))

    def action_toggle_mode(self) -> None:
        """Switch between chat and completion mode (from the next reply)."""
        self.notify(switch_mode(self.chat.conversation), timeout=10)

    def action_toggle_colour(self) -> None:
        """Tint each token by its probability (or stop tinting)."""
        self.chat.set_colour(not self.chat.colour)

    def action_toggle_thinking(self) -> None:
        """Show the replies' thinking, or fold it."""
        self.chat.toggle_thinking()

    def action_plot(self, plot: str) -> None:
        """Cycle the reply timeline's rows ("timeline") or show/hide the tail plot ("tail")."""
        self.chat.toggle_panel(plot)

    def action_token_cursor(self) -> None:
        """Enter token-cursor mode on the latest token."""
        self.chat.enter_token_cursor()

    def action_whatif(self) -> None:
        """What-if on the selected past token (again: off); on a narrow terminal with the
        panels folded, a notice says where it shows."""
        whatif = self.chat.whatif
        whatif.toggle(self.chat.cursor)
        if whatif.active and self.folded and not self.has_class("-panels"):
            self.notify("What if shows in the panels: f10 shows them over the chat.")

    def action_whatif_branch(self) -> None:
        """Branch from the what-if step with the token it shows drawn."""
        self.chat.whatif.branch()

    def action_whatif_command(self) -> None:
        """Copy the command line that makes the what-if's branch."""
        self.chat.whatif.copy_command()

    def action_explore(self) -> None:
        """The tree of continuations at the selected past token."""
        open_explore(self.chat, self.chat.cursor)

    def action_loop_why(self) -> None:
        """Why the selected (else the last looping) reply looped, and the ways out."""
        open_loop_why(self.chat)

    def action_focus_sampling(self) -> None:
        """Focus the first slider (on a narrow terminal, the panels show over the chat)."""
        if self.folded:
            self.add_class("-panels")
        self.chat.focus_sampling()

    def action_toggle_panels(self) -> None:
        """Narrow terminal: show the panels over the chat, or fold them (back to the input)."""
        self.toggle_class("-panels")
        focused = self.focused
        panels = self.query_one("#right")
        if not self.has_class("-panels") and focused and panels in focused.ancestors:
            self.chat.focus_input()  # the focus was in the panels folded away

    def action_focus_input(self) -> None:
        """Focus the message box."""
        self.chat.focus_input()

    def action_pick_model(self) -> None:
        """Open another model from the ones on disk (the chat goes on)."""
        self.host.switcher.pick()

    def action_score_text(self) -> None:
        """Score a pasted or opened text with the model (a screen of its own)."""
        if self._refused():
            return
        if self.chat.generating:
            self.notify("wait for the reply to finish")
            return
        self.app.push_screen(ScoreScreen(self.host.runner))

    def action_compare(self) -> None:
        """Regenerate the last user turn under several settings, side by side."""
        open_compare(self.app)
