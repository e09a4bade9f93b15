"""The chat's keys: the bindings the app has while the chat is on top, each with an id
(the config's [keys] moves it), a footer label and the help's longer text."""

from __future__ import annotations

from textual.binding import Binding

# Each binding has an id (its action's name) so that the config file's [keys] table can
# move it (`App.set_keymap`); the footer shows `description`, the help `tooltip`.
CHAT_BINDINGS: tuple[Binding, ...] = (
    # Shown on a narrow terminal only, where the panels fold (see `ChatScreen`):
    # first, so that the footer has room for it.
    Binding(
        "f10",
        "toggle_panels",
        "panels",
        tooltip="narrow terminal: show the panels over the chat (again: fold them)",
        id="toggle_panels",
    ),
    Binding(
        "escape",
        "stop",
        "stop",
        tooltip="stop the reply, keeping what was generated; leave what-if, the token cursor",
        id="stop",
    ),
    Binding(
        "ctrl+r",
        "regenerate",
        "regen",
        tooltip="regenerate the last reply with the same seed (a new branch)",
        id="regenerate",
    ),
    Binding("ctrl+n", "new_chat", "new chat", tooltip="new chat", id="new_chat"),
    Binding(
        "ctrl+o",
        "history",
        "chats",
        tooltip="saved chats: search, open one and continue it, delete one",
        id="history",
    ),
    Binding(
        "ctrl+y",
        "copy_reply",
        "copy",
        tooltip="copy the reply (the selected one, else the last)",
        id="copy_reply",
    ),
    Binding("ctrl+g", "new_seed", "new seed", tooltip="new random seed", id="new_seed"),
    Binding(
        "ctrl+l",
        "toggle_colour",
        "colour",
        tooltip="colour each token by its probability",
        id="toggle_colour",
    ),
    # Shown once a reply has a thinking (a thinking model's), so that a chat without
    # one shows the footer it had.
    Binding(
        "ctrl+b",
        "toggle_thinking",
        "thinking",
        tooltip="show the replies' thinking, or fold each under its summary line",
        id="toggle_thinking",
    ),
    # priority: the focus moves as the key comes, so that a letter typed straight
    # after it (w, x) reaches the token cursor, not the message box
    Binding(
        "ctrl+t",
        "token_cursor",
        "tokens",
        priority=True,
        tooltip="token cursor: pick a past token; its step shows on the right",
        id="token_cursor",
    ),
    # Letters: the message box takes them while it has focus. The token cursor's
    # footer shows `w` and `x`; `b` shows while what-if is on.
    Binding(
        "w",
        "whatif",
        "what if",
        show=False,
        tooltip="what if: the selected token's step under the current settings (again: off)",
        id="whatif",
    ),
    Binding(
        "b",
        "whatif_branch",
        "branch",
        tooltip="what if: branch from its step with the token it shows drawn",
        id="whatif_branch",
    ),
    Binding(
        "y",
        "whatif_command",
        "copy cmd",
        tooltip="what if: copy the command line that makes the branch b ▶ starts",
        id="whatif_command",
    ),
    Binding(
        "x",
        "explore",
        "explore",
        show=False,
        tooltip="explore the continuations the chain keeps at the selected token",
        id="explore",
    ),
    # priority: over the input's ctrl+d
    Binding(
        "ctrl+d",
        "compare",
        "compare",
        priority=True,
        tooltip="compare: the last question under several settings, one seed",
        id="compare",
    ),
    Binding(
        "f2", "focus_sampling", "sliders", tooltip="go to the sampling panel", id="focus_sampling"
    ),
    Binding(
        "f3", "focus_input", "input", show=False, tooltip="go to the input box", id="focus_input"
    ),
    Binding(
        "f4",
        "plot('timeline')",
        "timeline",
        tooltip="reply timeline; again: with the kept count; again: hidden",
        id="timeline",
    ),
    Binding(
        "f5",
        "plot('tail')",
        "tail",
        tooltip="tail plot: the selected step's probability by rank, log scale, the cut",
        id="tail",
    ),
    Binding(
        "f6",
        "toggle_mode",
        "mode",
        tooltip="switch between chat and completion mode (plain text continued)",
        id="toggle_mode",
    ),
    Binding(
        "f7",
        "pick_model",
        "model",
        show=False,
        tooltip="open another model on disk; the chat goes on with it",
        id="pick_model",
    ),
    Binding(
        "f8",
        "score_text",
        "score",
        tooltip="score a text: each token's p, rank, entropy; perplexity",
        id="score_text",
    ),
    Binding(
        "f9",
        "loop_why",
        "loop",
        tooltip="a reply's repetition loop, copy under copy, and the ways out",
        id="loop_why",
    ),
)
