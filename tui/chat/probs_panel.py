"""The chat's probability panel: the selected token's step as bars (`ProbPanel`)."""

from __future__ import annotations

from typing import ClassVar

from tui.chat.selection import ChatPanel, PanelHost, Selection
from tui.widgets.prob_panel import ProbPanel


class ChatProbs(ProbPanel, ChatPanel):
    """The selected token's candidates before and after the filters, with the cut.

    Titled by which token it is ("reply 2 token 5/40", "token 40 (latest)"), or by
    why there is none (the selection's note).
    """

    NAME = "probs"
    PAINT_EVERY = 2
    DEFAULT_CSS: ClassVar[str] = """
    ChatProbs {
        height: 1fr;
        border: round $primary-background-lighten-2;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    """

    def __init__(self, host: PanelHost) -> None:
        super().__init__(id=self.NAME)
        self.host = host

    def watch_selected(self, selection: Selection) -> None:
        self.show(selection.step, selection.title, self.host.pieces)
