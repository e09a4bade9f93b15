"""The model picker: the GGUFs `samplescope models` lists; Enter opens one in the app.

A modal screen: push it with a function listing the models (run on a thread worker,
as reading every file's metadata can take a moment) and get the chosen model back
from `dismiss` (None when the user leaves with escape). The box on top filters the
list by name as the user types; text starting with "/", "~" or "./" is a file's path
instead (Tab completes it) and Enter opens that file, listed or not:

    self.push_screen(ModelPickerScreen(models_on_disk, current=path), picked)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from backend.config.model_catalog import LocalModel, describe
from backend.config.paths import user_file
from backend.errors import FileAccessError
from tui.models.path_completion import GgufPathSuggester, complete_path, is_path

ListModels = Callable[[], Sequence[LocalModel]]
"""Lists the models on disk (runs on a thread worker)."""


def model_line(model: LocalModel, *, loaded: bool = False) -> Text:
    """One model as the picker shows it: name, then what it is and where it was found."""
    line = Text(model.name, style="bold")
    if loaded:
        line.append("  (loaded)", style="green")
    if model.problem:
        line.append(f"\n  cannot be read: {model.problem}", style="red")
        return line
    if model.vocab_only:
        line.append(f"\n  vocabulary only (no weights) · {model.source}", style="red")
        return line
    details = [
        model.quantization,
        model.architecture,
        f"ctx {model.context_length}" if model.context_length else "",
        f"{model.size / 1e6:,.0f} MB" if model.size >= 1e6 else f"{model.size:,} B",
        "chat template" if model.chat_template else "no chat template",
        model.source,
    ]
    line.append("\n  " + " · ".join(d for d in details if d), style="grey70")
    return line


def matches(model: LocalModel, words: list[str]) -> bool:
    """Whether every word typed (lower case) is in the model's name, path, source,
    architecture or quantization."""
    fields = " ".join(
        (model.name, str(model.path), model.source, model.architecture, model.quantization)
    ).lower()
    return all(word in fields for word in words)


OPEN_FILE = "open-file"
"""The id of the list's last option, "Open a file…"."""
FILTER_HINT = "type to filter · a path (/ ~ ./) opens a file, Tab completes"


class ModelPickerScreen(ModalScreen[LocalModel | None]):
    """Lists the models on disk; Enter returns the highlighted one.

    Args:
        list_models: Lists them (on a thread worker).
        current: The loaded model's file, marked in the list (None: none).
        title: What the picker is for (the contrast model is picked with it too).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel"),
        Binding("tab", "complete", "complete the path", show=False),
        Binding("down", "move(1)", "next", show=False),
        Binding("up", "move(-1)", "previous", show=False),
    ]
    DEFAULT_CSS = """
    ModelPickerScreen { align: center middle; }
    #model-picker { width: 90%; height: 80%; border: round $accent; background: $surface;
                    padding: 0 1; }
    #model-picker-title { height: auto; }
    #model-filter { margin: 1 0 0 0; }
    #model-list { height: 1fr; }
    """

    def __init__(
        self, list_models: ListModels, *, current: Path | None = None, title: str = "Open a model"
    ) -> None:
        super().__init__()
        self._title = title
        self._list_models = list_models
        self._current = current.resolve() if current is not None else None
        self.models: list[LocalModel] = []
        """The models listed (empty until the list is read)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="model-picker"):
            yield Static(Text(self._title, style="bold"), id="model-picker-title")
            yield Static("Looking for GGUF files…", id="model-picker-note")
            yield Input(placeholder=FILTER_HINT, suggester=GgufPathSuggester(), id="model-filter")
            yield OptionList(id="model-list")

    def on_mount(self) -> None:
        self.query_one("#model-filter", Input).focus()
        self._read_list()

    @work(thread=True, exclusive=True, group="model-list")
    def _read_list(self) -> None:
        try:
            models = list(self._list_models())
        except Exception as error:  # a listing that fails is shown, never fatal
            self.app.call_from_thread(self._show_problem, f"{type(error).__name__}: {error}")
            return
        self.app.call_from_thread(self._show, models)

    def _show(self, models: list[LocalModel]) -> None:
        self.models = models
        self._fill(self.query_one("#model-filter", Input).value)
        note = self.query_one("#model-picker-note", Static)
        if models:
            note.update(
                Text(
                    f"{len(models)} found (Hugging Face cache, LM Studio, Ollama, llama.cpp's"
                    " cache, the config's model_dirs, the bundled model): Enter opens one,"
                    " the chat goes on",
                    style="grey70",
                )
            )
        else:
            note.update(
                "No GGUF found in the Hugging Face cache, LM Studio, Ollama, llama.cpp's"
                " cache or the config's model_dirs (`samplescope models` lists the same):"
                " type a file's path to open it."
            )

    def _fill(self, typed: str) -> None:
        """The list for what is typed: the models matching it, then "Open a file…"; a
        path typed lists only the file it names."""
        options = self.query_one(OptionList)
        options.clear_options()
        if is_path(typed):
            options.add_option(Option(Text(f"Open {typed}", style="bold"), id=OPEN_FILE))
            options.highlighted = 0
            return
        words = typed.lower().split()
        for index, model in enumerate(self.models):
            if not matches(model, words):
                continue
            loaded = self._current is not None and _same_file(model.path, self._current)
            options.add_option(
                Option(
                    model_line(model, loaded=loaded),
                    id=str(index),
                    disabled=bool(model.problem or model.vocab_only),
                )
            )
        options.add_option(
            Option(Text("Open a file…  (type its path above)", style="italic"), id=OPEN_FILE)
        )
        options.highlighted = 0

    @on(Input.Changed, "#model-filter")
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        self._fill(event.value)

    @on(Input.Submitted, "#model-filter")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if is_path(event.value):
            self._open_path(event.value)
        else:
            self.query_one(OptionList).action_select()

    def action_complete(self) -> None:
        """Tab: the typed path completed as far as its folder's entries agree (the focus
        stays in the box)."""
        box = self.query_one("#model-filter", Input)
        if is_path(box.value):
            box.value = complete_path(box.value)
            box.cursor_position = len(box.value)

    def action_move(self, step: int) -> None:
        """Up and down move through the list while the box has the focus."""
        options = self.query_one(OptionList)
        if step > 0:
            options.action_cursor_down()
        else:
            options.action_cursor_up()

    def _show_problem(self, problem: str) -> None:
        self.query_one("#model-picker-note", Static).update(
            Text(f"The models could not be listed: {problem}", style="red")
        )

    @on(OptionList.OptionSelected, "#model-list")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id == OPEN_FILE:
            box = self.query_one("#model-filter", Input)
            if is_path(box.value):
                self._open_path(box.value)
            else:
                box.value = "~/" if not box.value else box.value
                box.cursor_position = len(box.value)
                box.focus()
        elif event.option.id is not None:
            self.dismiss(self.models[int(event.option.id)])

    def _open_path(self, typed: str) -> None:
        """Open the file typed, or say in the note why it cannot be."""
        note = self.query_one("#model-picker-note", Static)
        try:
            path = user_file(Path(typed))
        except FileAccessError as error:  # served: the same line whether it exists or not
            note.update(Text(str(error), style="red"))
            self.notify(str(error), severity="error")
            return
        if not path.is_file():
            note.update(Text(f"No file at {typed} (Tab completes a path).", style="red"))
            return
        model = describe(path.name, path, "file")
        if model.problem:
            note.update(Text(f"{typed} cannot be opened: {model.problem}", style="red"))
        elif model.vocab_only:
            note.update(
                Text(f"{typed} holds a vocabulary alone (no weights): not a model.", style="red")
            )
        else:
            self.dismiss(model)

    def action_cancel(self) -> None:
        self.dismiss(None)


def _same_file(path: Path, other: Path) -> bool:
    try:
        return path.resolve() == other
    except OSError:
        return False
