"""Why a reply looped: its loop's copies one under the other, token by token.

A grid: one row per copy, one column per token of the period, each cell the token's
probability at temperature 1 after the penalties and DRY, before the filters (the
climb reads down a column); the selected cell's token is
told in full below: its probability at each stage of the sampler copy after copy
(`tui.loops.climb`), what cut the others, what DRY could see. Under it, the first
token of the loop's first copy with its alternatives: where another choice would
have left the loop. `a` goes back there and opens the alternatives (a new branch),
`x` bans the loop there and goes on (the phrase-ban backtracking: the rejected
attempt stays as a ghost branch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from backend.chat.events import TokenEvent
from backend.session.run import StepInput
from sampling.analysis.loops import Loop
from sampling.samplers.dry import DryParams
from sampling.samplers.penalties import PenaltiesParams
from tui.loops.climb import LoopCell, climb_text, dry_blind_spot, loop_cells
from tui.styled_once import StyledOnceScreen
from tui.widgets.alternatives import candidate_rows
from tui.widgets.steady_footer import SteadyFooter
from tui.widgets.table_fill import fill_table
from tui.widgets.token_text import TokenPieces

WhyChoice = Literal["alternatives", "ban"]
"""What the user asked for on leaving: the alternatives at the loop's start, or the
loop banned there."""

ALTERNATIVE_ROWS = 6
"""The first token's candidates shown."""


def cell_style(prob: float) -> str:
    """A cell's colour: the surer the token, the hotter."""
    if prob >= 0.9:
        return "bold red"
    if prob >= 0.6:
        return "yellow"
    if prob >= 0.3:
        return "green"
    return "cyan"


def loop_title(number: int, loop: Loop) -> str:
    """The screen's heading."""
    return (
        f"loop in reply {number + 1}: {loop.period} tokens × {loop.count} copies"
        f" from token {loop.start + 1}{loop.section_note}"
        " · each cell: the token's p after penalties and DRY"
    )


def cell_prob(cell: LoopCell) -> float:
    """What a grid cell shows: the token's p after penalties and DRY (the drawn p when
    the record has no unfiltered one)."""
    shaped = cell.shaped
    return cell.drawn if shaped is None else shaped


def dry_note(rows: Sequence[Sequence[LoopCell]]) -> str | None:
    """What DRY could see of the loop, when it was on (None: it was off)."""
    settings = rows[0][0].step.settings
    if settings.of(DryParams).dry_multiplier == 0.0:
        return None
    copy_text = "".join(cell.text for cell in rows[0])
    blind = dry_blind_spot(copy_text, settings.of(DryParams).dry_sequence_breakers)
    if blind is None:
        return "on; the loop holds none of its sequence breakers"
    return (
        f"on, but each copy holds the sequence breaker {blind!r}: DRY's repeat restarts "
        f"after it, so it sees repeats of at most a line, never the {len(rows[0])}-token loop"
    )


def cell_detail(column: Sequence[LoopCell], at: LoopCell, dry: str | None) -> Text:
    """What the selected token went through, copy after copy."""
    step = at.step
    text = Text()
    text.append(f"token {at.index + 1} ", style="bold")
    text.append(repr(at.piece))
    text.append(f" · copy {at.copy + 1}, place {at.offset + 1} of the period\n")
    text.append("copy after copy (the climb):\n", style="bold")
    rows = (
        ("  raw model p    ", [c.raw for c in column]),
        ("  after penalties", [c.penalized for c in column]),
        ("  after DRY, bias", [c.shaped for c in column]),
        ("  drawn from     ", [c.drawn for c in column]),
    )
    for label, values in rows:
        text.append(label)
        text.append(f"  {climb_text(values)}\n")
    if at.raw is None:
        text.append("  (— : this step's logits are no longer in memory)\n", style="dim")
    settings = step.settings
    notes = [f"{step.n_kept} kept", f"last cut by {step.cut_by}"]
    if step.rank_known is not None:
        notes.insert(0, f"rank {step.rank_known}")
    if not settings.of(PenaltiesParams).penalizes:
        notes.append("no repeat penalty")
    if settings.of(DryParams).dry_multiplier == 0.0:
        notes.append("DRY off")
    text.append("this copy: " + " · ".join(notes) + "\n")
    if dry is not None:
        text.append("DRY: ", style="bold")
        text.append(dry)
    return text


class LoopWhyScreen(StyledOnceScreen[WhyChoice | None]):
    """The loop's copies and the climb (see the module doc).

    Args:
        number: The reply's number in the conversation.
        tokens: The reply's tokens.
        loop: Its loop.
        pieces: Shows any token id (the alternatives).
        inputs: A step's kept logits and history by index (None: not kept).
    """

    DEFAULT_CSS = """
    LoopWhyScreen #loop-title { height: 1; text-style: bold; padding: 0 1; }
    LoopWhyScreen #loop-grid { height: auto; max-height: 14; }
    LoopWhyScreen #loop-detail { height: auto; padding: 0 1; border-top: solid $accent; }
    LoopWhyScreen #loop-start { height: auto; padding: 0 1; border-top: solid $accent; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "choose('alternatives')", "alternatives at its start"),
        Binding("x", "choose('ban')", "ban it there, go on"),
        Binding("escape", "choose(None)", "back"),
    ]

    def __init__(
        self,
        number: int,
        tokens: Sequence[TokenEvent],
        loop: Loop,
        pieces: TokenPieces,
        inputs: Callable[[int], StepInput | None] = lambda _: None,
    ) -> None:
        super().__init__()
        self.number = number
        self.loop = loop
        self.pieces = pieces
        self.rows = loop_cells(tokens, loop, inputs)
        self.dry = dry_note(self.rows)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(loop_title(self.number, self.loop)), id="loop-title")
            yield DataTable(id="loop-grid", cursor_type="cell", zebra_stripes=True)
            yield Static(id="loop-detail")
            yield Static(self._start_text(), id="loop-start")
        yield SteadyFooter()

    def on_mount(self) -> None:
        self.fill_grid()
        grid = self.query_one(DataTable)
        grid.move_cursor(row=len(self.rows) - 1, column=0)
        self.set_focus(grid)
        self._show_detail(len(self.rows) - 1, 0)

    def fill_grid(self) -> None:
        """List the copies one a row, each token of the loop a column."""
        grid = self.query_one(DataTable)
        first = self.rows[0]
        fill_table(
            grid,
            [Text(cell.piece[:8] or "∅") for cell in first],
            [
                [Text(f"{cell_prob(c):.2f}", style=cell_style(cell_prob(c))) for c in row]
                + [Text("")] * (len(first) - len(row))
                for row in self.rows
            ],
            column_keys=[str(cell.offset) for cell in first],
            row_labels=[Text(f"copy {copy + 1}") for copy in range(len(self.rows))],
        )

    @property
    def selected(self) -> LoopCell | None:
        """The cell under the grid's cursor (None: an empty cell of the part copy)."""
        coordinate = self.query_one(DataTable).cursor_coordinate
        row = self.rows[coordinate.row] if coordinate.row < len(self.rows) else []
        return row[coordinate.column] if coordinate.column < len(row) else None

    @on(DataTable.CellHighlighted)
    def _on_cell(self, event: DataTable.CellHighlighted) -> None:
        event.stop()
        self._show_detail(event.coordinate.row, event.coordinate.column)

    def _show_detail(self, row: int, offset: int) -> None:
        column = [copy[offset] for copy in self.rows if offset < len(copy)]
        at = next((c for c in column if c.copy == row), column[-1] if column else None)
        detail = self.query_one("#loop-detail", Static)
        detail.update(Text("") if at is None else cell_detail(column, at, self.dry))

    def _start_text(self) -> Text:
        first = self.rows[0][0]
        text = Text()
        text.append("where it began: ", style="bold")
        text.append(f"token {first.index + 1} {first.piece!r}")
        text.append(f" at p {first.drawn:.2f}: its alternatives there\n")
        for _, row in candidate_rows(first.step, self.pieces)[:ALTERNATIVE_ROWS]:
            text.append_text(row)
            text.append("\n")
        text.append("a: go back there and choose · x: ban the loop there and go on", style="dim")
        return text

    def action_choose(self, choice: WhyChoice | None) -> None:
        """Leave, asking for `choice` (None: nothing)."""
        self.dismiss(choice)
