"""Past chats: a searchable list; Enter opens one, d deletes one (after a confirm).

A standalone screen: push it with the app's `ChatStore` and get the chosen chat id
back from `dismiss` (None when the user leaves with escape):

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
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from backend.store.store import ChatStore, ChatSummary, StoreError
from tui.display import local_time
from tui.widgets.confirm import ConfirmScreen
from tui.widgets.steady_footer import SteadyFooter
from tui.widgets.table_fill import fill_table

HISTORY_COLUMNS = ("updated", "title", "model", "replies")


def replies_cell(replies: int, branches: int) -> str:
    """The replies column: the generated turns, and the other branches when there are
    any ("3 +2 branches")."""
    others = branches - replies
    if others <= 0:
        return str(replies)
    return f"{replies} +{others} branch" + ("es" if others > 1 else "")


class HistoryScreen(Screen[int | None]):
    """Lists saved chats (date, title, model, replies), newest first.

    Args:
        store: The chat database.
    """

    CSS_PATH = "screen.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "back"),
        Binding("enter", "open", "open", priority=True),
        Binding("d,delete", "delete", "delete"),
        Binding("slash,ctrl+f", "search", "search"),
    ]

    def __init__(self, store: ChatStore) -> None:
        super().__init__()
        self.store = store
        self.chats: list[ChatSummary] = []

    def compose(self) -> ComposeResult:
        yield Static(Text("Saved chats", style="bold"), id="history-title")
        yield Input(placeholder="search titles and messages…", id="history-search")
        yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
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
        keep = self.selected_chat_id()
        try:
            self.chats = self.store.list_chats(self.search_text or None)
        except StoreError as error:
            self.chats = []
            self.notify(str(error), severity="error", timeout=10)
        rows = [
            (
                Text(local_time(chat.updated)),
                Text(chat.title, no_wrap=True, overflow="ellipsis"),
                Text(chat.model_name or "-"),
                Text(replies_cell(chat.reply_count, chat.branch_count), justify="right"),
            )
            for chat in self.chats
        ]
        keys = [str(chat.id) for chat in self.chats]
        fill_table(table, HISTORY_COLUMNS, rows, column_keys=HISTORY_COLUMNS, row_keys=keys)
        ids = [chat.id for chat in self.chats]
        if keep in ids:
            table.move_cursor(row=ids.index(keep))
        empty = self.query_one("#history-empty", Static)
        if self.chats:
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

    def selected_chat_id(self) -> int | None:
        """The chat under the table's cursor (None when the list is empty)."""
        if not self.is_mounted:
            return None
        table = self.query_one(DataTable)
        if not self.chats or not 0 <= table.cursor_row < len(self.chats):
            return None
        return self.chats[table.cursor_row].id

    @on(Input.Changed, "#history-search")
    def _search_changed(self) -> None:
        self.refresh_list()

    @on(Input.Submitted, "#history-search")
    def _search_submitted(self) -> None:
        self.query_one(DataTable).focus()

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        """Close the screen with the selected chat's id."""
        chat_id = self.selected_chat_id()
        if chat_id is not None:
            self.dismiss(chat_id)

    def action_close(self) -> None:
        """Leave without opening a chat."""
        self.dismiss(None)

    def action_search(self) -> None:
        """Focus the search box."""
        self.query_one("#history-search", Input).focus()

    def action_delete(self) -> None:
        """Ask, then delete the selected chat."""
        chat_id = self.selected_chat_id()
        if chat_id is None:
            return
        title = next(chat.title for chat in self.chats if chat.id == chat_id)

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                self.store.delete_chat(chat_id)
            except StoreError as error:
                self.notify(str(error), severity="error", timeout=10)
                return
            self.refresh_list()
            self.notify(f"Deleted “{title}”.")

        self.app.push_screen(
            ConfirmScreen(f"Delete the chat “{title}” and all its replies?", yes_label="Delete"),
            answered,
        )
