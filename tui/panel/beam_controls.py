"""The sampling panel's beam search: replies by beam search instead of sampling."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message

from tui.panel.toggle import Toggle

BEAM_FIELDS = ("beam_width", "length_penalty")
"""The controls' fields (not sampler settings: the sampling panel leaves them alone)."""
WIDTHS: tuple[tuple[object, str], ...] = ((0, "off"), (2, "2"), (3, "3"), (4, "4"))
PENALTIES: tuple[tuple[object, str], ...] = ((0.0, "0"), (0.5, "0.5"), (1.0, "1"), (2.0, "2"))


class BeamControls(Vertical):
    """How many beams the next replies keep (off: sampled), and the length penalty.

    With beams on, a reply is the best of W beams ranked by their log-probability
    under the sampler chain's probabilities; the others become branches of the turn.
    """

    DEFAULT_CSS = """
    BeamControls { height: auto; }
    """

    class Changed(Message):
        """Beam search asked for (0 beams: off).

        Attributes:
            width: How many beams (0: replies are sampled).
            length_penalty: A finished beam ranks by logprob / length ** it.
        """

        def __init__(self, width: int, length_penalty: float) -> None:
            super().__init__()
            self.width = width
            self.length_penalty = length_penalty

    def __init__(self) -> None:
        super().__init__(id="beam-search")
        self.width = 0
        self.length_penalty = 0.0

    def compose(self) -> ComposeResult:
        yield Toggle("beam_width", "beams", WIDTHS, self.width)
        yield Toggle("length_penalty", "length pen.", PENALTIES, self.length_penalty)

    @on(Toggle.Changed)
    def _on_toggle(self, event: Toggle.Changed) -> None:
        event.stop()
        value = event.value
        if event.toggle.field == "beam_width" and isinstance(value, int):
            self.width = value
        elif isinstance(value, int | float):
            self.length_penalty = float(value)
        event.toggle.set_value(value)
        self.post_message(self.Changed(self.width, self.length_penalty))
