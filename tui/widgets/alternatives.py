"""The alternatives of one past token: pick another candidate, or draw again.

Each row is one candidate of that step, most probable first: its rank, its text
(shown literally), its probability before the filters and after, and whether it
was kept or which sampler cut it. Choosing a row dismisses with that token (the reply
is cut there, the token forced and the reply continued); the last row re-samples the
step with the current settings. Escape dismisses with None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from sampling.records import Step
from tui.widgets.token_text import TokenPieces

RESAMPLE_ID = "resample"


@dataclass(frozen=True, slots=True)
class Alternative:
    """What the user chose: a token to force, or None to draw the step again."""

    token: int | None


def candidate_rows(step: Step, pieces: TokenPieces) -> list[tuple[int, Text]]:
    """(token id, row text) for each candidate of a step, most probable first."""
    table = step.table
    rows: list[tuple[int, Text]] = []
    for rank in range(int(table.token_ids.shape[0])):
        token = int(table.token_ids[rank])
        kept = bool(table.kept[rank])
        fate = "kept" if kept else f"cut by {table.removed_by[rank] or step.cut_by}"
        chosen = "●" if token == step.token_id else " "
        text = Text(f"{rank + 1:<3d}{chosen} ")  # left-aligned: rows keep no leading blank
        text.append(f"{pieces(token)[:18]:<18}", style="bold")
        text.append(
            f" {float(table.prob_before[rank]):7.2%} → {float(table.prob_after[rank]):7.2%}  "
        )
        text.append(fate, style="green" if kept else "red")
        rows.append((token, text))
    return rows


class AlternativesScreen(ModalScreen[Alternative | None]):
    """The candidates of a step (see the module doc).

    Args:
        step: The step's record.
        title: What the step is, e.g. "reply 1 token 3".
        pieces: Shows each candidate's text.
        highlighted: The row the cursor starts on (the last: re-sample).
    """

    DEFAULT_CSS = """
    AlternativesScreen { align: center middle; }
    AlternativesScreen > #alternatives-box {
        width: 64; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    AlternativesScreen OptionList { height: auto; max-height: 24; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "back")]

    def __init__(self, step: Step, title: str, pieces: TokenPieces, highlighted: int = 0) -> None:
        super().__init__()
        self.step = step
        self.highlighted = highlighted
        self.title_text = title
        self.rows = candidate_rows(step, pieces)

    def compose(self) -> ComposeResult:
        with Vertical(id="alternatives-box"):
            yield Static(
                Text(f"{self.title_text}: force a candidate and continue"),
                id="alternatives-title",
            )
            options = [Option(text, id=f"token-{token}") for token, text in self.rows]
            options.append(Option("↻   re-sample here with the current settings", RESAMPLE_ID))
            yield OptionList(*options, id="alternatives")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = self.highlighted
        self.set_focus(options)  # at once, not after the messages already queued

    def action_close(self) -> None:
        """Close without choosing."""
        self.dismiss(None)

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id or ""
        if option_id == RESAMPLE_ID:
            self.dismiss(Alternative(None))
        else:
            self.dismiss(Alternative(int(option_id.removeprefix("token-"))))
