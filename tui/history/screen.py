"""Past chats: a searchable list; Enter opens one, d deletes one (after a confirm).

A kept sweep is one entry ("12 samples") standing for its samples' chats: Enter
opens it on its frontier (its samples open as chats from there), d deletes it with
its samples.

A standalone screen: push it with the app's `ChatStore` and get the chosen chat id
(or the chosen sweep's result) back from `dismiss` (None when the user leaves with
escape):

    def open_history(self) -> None:
        def opened(chat_id: int | None) -> None:
            if chat_id is not None:
                self.load_chat(self.store.load_chat(chat_id))
        self.push_screen(HistoryScreen(self.store), opened)

Store reads here run on the UI thread: they are small indexed SQLite queries
(milliseconds), unlike generation, which never runs here.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Input, Static

from backend.config.paths import data_dir
from backend.session.recorded_sweep import delete_kept_sweep, kept_sweep
from backend.session.sweep_result import SweepResult
from backend.store.store import ChatStore, HistoryEntry, StoreError, SweepSummary
from sampling.errors import SamplescopeError
from tui.display import local_time
from tui.styled_once import StyledOnceScreen
from tui.widgets.confirm import ConfirmScreen
from tui.widgets.steady_footer import SteadyFooter
from tui.widgets.table_fill import fill_table, text_width

HISTORY_COLUMNS = ("updated", "title", "model", "replies")
TITLE_LEAST = 16
"""A title keeps this many cells however narrow the screen (the others then scroll)."""
TABLE_FRAME = 4
"""The table's margins (1 a side) and its vertical scrollbar (2)."""


def replies_cell(replies: int, branches: int) -> str:
    """The replies column: the generated turns, and the other branches when there are
    any ("3 +2 branches")."""
    others = branches - replies
    if others <= 0:
        return str(replies)
    return f"{replies} +{others} branch" + ("es" if others > 1 else "")


def _replies(entry: HistoryEntry) -> str:
    if isinstance(entry, SweepSummary):
        return f"{entry.samples} sample" + ("s" if entry.samples != 1 else "")
    return replies_cell(entry.reply_count, entry.branch_count)


HistoryChoice = int | SweepResult | None
"""What the screen closes with: a chat's id, a sweep's result, or None."""


def _key(entry: HistoryEntry) -> str:
    """The table's row key: chats and sweeps count their ids apart."""
    return f"sweep-{entry.id}" if isinstance(entry, SweepSummary) else str(entry.id)


class ChatTable(DataTable[Text]):
    """The list: Enter selects a row (which opens it), shown in the footer as "open"."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "open", key_display="⏎"),
    ]


class HistoryScreen(StyledOnceScreen[HistoryChoice]):
    """Lists saved chats (date, title, model, replies), newest first; a kept sweep as
    one entry.

    Args:
        store: The chat database.
    """

    CSS_PATH = "screen.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "back"),
        # Not a priority binding: Enter waits for the keys typed before it (a Down), in
        # the table (its row selected) and in the search box (submitted) alike.
        Binding("enter", "open", "open"),
        Binding("d,delete", "delete", "delete"),
        Binding("slash,ctrl+f", "search", "search"),
    ]

    def __init__(self, store: ChatStore) -> None:
        super().__init__()
        self.store = store
        self.entries: list[HistoryEntry] = []
        """The lines listed: chats, and sweeps standing for their samples."""

    def compose(self) -> ComposeResult:
        yield Static(Text("Saved chats", style="bold"), id="history-title")
        yield Input(placeholder="search titles and messages…", id="history-search")
        yield ChatTable(id="history-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="history-empty")
        yield SteadyFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        self.refresh_list()
        table.focus()

    @property
    def search_text(self) -> str:
        """What the search box holds."""
        return self.query_one("#history-search", Input).value.strip()

    def refresh_list(self) -> None:
        """Reload the chats matching the search box, keeping the cursor's chat."""
        table = self.query_one(DataTable)
        keep = self.selected()
        try:
            self.entries = self.store.list_history(self.search_text or None)
        except StoreError as error:
            self.entries = []
            self.notify(str(error), severity="error", timeout=10)
        rows = [
            (
                Text(local_time(entry.updated)),
                Text(entry.title, no_wrap=True, overflow="ellipsis"),
                Text(entry.model_name.removesuffix(".gguf") or "-"),
                Text(_replies(entry), justify="right"),
            )
            for entry in self.entries
        ]
        room = self._title_room(rows)
        for row in rows:
            row[1].truncate(room, overflow="ellipsis")
        keys = [_key(entry) for entry in self.entries]
        fill_table(table, HISTORY_COLUMNS, rows, column_keys=HISTORY_COLUMNS, row_keys=keys)
        if keep is not None and _key(keep) in keys:
            table.move_cursor(row=keys.index(_key(keep)))
        empty = self.query_one("#history-empty", Static)
        if self.entries:
            empty.update("")
            empty.display = False
        else:
            what = (
                f"No saved chat matches {self.search_text!r}."
                if self.search_text
                else ("No saved chats yet.")
            )
            empty.update(Text(what))
            empty.display = True

    def on_resize(self) -> None:
        self.refresh_list()  # the titles are cut to the new width

    def _title_room(self, rows: list[tuple[Text, Text, Text, Text]]) -> int:
        """The most cells a title may take for the other columns to stay in view
        (at least TITLE_LEAST): the screen's width less theirs, each cell's padding,
        the table's margins and a vertical scrollbar."""
        others = [
            max([len(label), *(text_width(row[index]) for row in rows)])
            for index, label in enumerate(HISTORY_COLUMNS)
            if index != 1
        ]
        padding = 2 * len(HISTORY_COLUMNS) + TABLE_FRAME
        return max(TITLE_LEAST, self.size.width - sum(others) - padding)

    def selected(self) -> HistoryEntry | None:
        """The entry under the table's cursor (None when the list is empty)."""
        if not self.is_mounted:
            return None
        table = self.query_one(DataTable)
        if not 0 <= table.cursor_row < len(self.entries):
            return None
        return self.entries[table.cursor_row]

    @on(Input.Changed, "#history-search")
    def _search_changed(self) -> None:
        self.refresh_list()

    @on(Input.Submitted, "#history-search")
    def _search_submitted(self) -> None:
        self.action_open()  # the first match, or the row the cursor was left on

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        """Close the screen with the selected chat's id, or the selected sweep's result."""
        entry = self.selected()
        if isinstance(entry, SweepSummary):
            try:
                self.dismiss(kept_sweep(self.store, entry.id))
            except SamplescopeError as error:
                self.notify(str(error), severity="error", timeout=10)
        elif entry is not None:
            self.dismiss(entry.id)

    def action_close(self) -> None:
        """Leave without opening a chat."""
        self.dismiss(None)

    def action_search(self) -> None:
        """Focus the search box."""
        self.query_one("#history-search", Input).focus()

    def action_delete(self) -> None:
        """Ask, then delete the selected chat (a sweep: with its samples)."""
        entry = self.selected()
        if entry is None:
            return
        title = entry.title
        if isinstance(entry, SweepSummary):
            question = f"Delete the sweep “{title}” and its {_replies(entry)}?"
        else:
            question = f"Delete the chat “{title}” and all its replies?"

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            file = None
            try:
                if isinstance(entry, SweepSummary):
                    file = delete_kept_sweep(self.store, entry.id, data_dir())
                else:
                    self.store.delete_chat(entry.id)
            except StoreError as error:
                self.notify(str(error), severity="error", timeout=10)
                return
            self.refresh_list()
            also = "" if file is None else f" and its result file {file}"
            self.notify(f"Deleted “{title}”{also}.", markup=False)

        self.app.push_screen(ConfirmScreen(question, yes_label="Delete"), answered)
