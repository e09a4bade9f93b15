"""The chat's per-token panels, in the order each column shows them.

Each is a `ChatPanel` (`tui.chat.selection`): it draws the chat's selection, with
its own CSS and redraw rate. A new per-token panel is its module plus one line here.
"""

from __future__ import annotations

from tui.chat.probs_panel import ChatProbs
from tui.chat.selection import ChatPanel
from tui.chat.tail_plot import TailPlot
from tui.chat.timeline import ReplyTimeline
from tui.chat.two_distributions import TwoDistributions
from tui.chat.whatif_panel import WhatIfPanel

PANELS: tuple[type[ChatPanel], ...] = (
    ReplyTimeline,
    ChatProbs,
    TwoDistributions,
    WhatIfPanel,
    TailPlot,
)
"""Each panel's class, made with the chat view as its host."""
