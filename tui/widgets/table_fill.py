"""Fill a DataTable with its rows at their final column widths at once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.text import Text
from textual.widgets import DataTable


def cell_text(cell: object) -> Text:
    """A cell as the table draws it: a Text as it is, anything else as its literal text
    (never markup: the cells hold model text)."""
    return cell if isinstance(cell, Text) else Text(str(cell))


def fill_table(
    table: DataTable[Any], labels: Sequence[str], rows: Iterable[Sequence[object]]
) -> None:
    """Replace the table's columns and rows, each column as wide as its widest cell or label.

    A DataTable measures the rows added since it was last idle only then, and the lines it
    drew in the meantime keep the widths they were drawn with (its line cache does not see
    the new widths): a frame drawn in between, as on a busy machine, left the columns as
    wide as their labels, the cells cut. Widths given with the columns leave nothing to
    measure later.
    """
    cells = [[cell_text(cell) for cell in row] for row in rows]
    table.clear(columns=True)
    for index, label in enumerate(labels):
        widths = (row[index].cell_len for row in cells if index < len(row))
        table.add_column(label, width=max(Text(label).cell_len, *widths))
    table.add_rows(cells)
