"""Fill a DataTable with its rows at their final column widths at once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import zip_longest
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable


def cell_text(cell: object) -> Text:
    """A cell as the table draws it: a Text as it is, anything else as its literal text
    (never markup: the cells hold model text)."""
    return cell if isinstance(cell, Text) else Text(str(cell))


def text_width(text: Text) -> int:
    """The cells `text` takes in a table: its widest line, as the table measures it."""
    return max((cell_len(line) for line in text.plain.splitlines()), default=0)


def fill_table(
    table: DataTable[Any],
    labels: Sequence[str | Text],
    rows: Iterable[Sequence[object]],
    *,
    column_keys: Sequence[str] | None = None,
    row_keys: Iterable[str] | None = None,
    row_labels: Iterable[Text] | None = None,
) -> None:
    """Replace the table's columns and rows, each column as wide as its widest cell or label.

    A DataTable measures the rows added since it was last idle only then, and the lines it
    drew in the meantime keep the widths they were drawn with (its line cache does not see
    the new widths): a frame drawn in between, as on a busy machine, left the columns as
    wide as their labels, the cells cut. Widths given with the columns leave nothing to
    measure later. Labels and cells go in as literal text, never markup.

    Args:
        table: The table to fill.
        labels: The columns' labels.
        rows: The rows' cells, one a column (a short row leaves its last cells empty).
        column_keys: The columns' keys (None: generated).
        row_keys: The rows' keys, one a row (None: generated).
        row_labels: The rows' labels, drawn left of their cells (None: no label column).
    """
    heads = [cell_text(label) for label in labels]
    cells = [[cell_text(cell) for cell in row] for row in rows]
    keys = list(row_keys) if row_keys is not None else [None] * len(cells)
    names = list(row_labels) if row_labels is not None else [None] * len(cells)
    if len(keys) != len(cells) or len(names) != len(cells):
        raise ValueError("fill_table needs one row key and one row label a row")
    table.clear(columns=True)
    for index, (head, key) in enumerate(zip_longest(heads, column_keys or ())):
        widths = (text_width(row[index]) for row in cells if index < len(row))
        table.add_column(head, width=max([text_width(head), *widths]), key=key)
    for row, key, name in zip(cells, keys, names, strict=True):
        table.add_row(*row, key=key, label=name)
    if row_labels is not None and cells:
        # The label column, too, is otherwise measured (and shown at all) only once idle;
        # the DataTable has no public way to give it its width.
        table._label_column.content_width = max(text_width(n) for n in names if n is not None)
        table._labelled_row_exists = True
