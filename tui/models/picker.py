"""The model picker: the GGUFs `samplescope models` lists; Enter opens one in the app.

A modal screen: push it with a function listing the models (run on a thread worker,
as reading every file's metadata can take a moment) and get the chosen model back
from `dismiss` (None when the user leaves with escape):

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
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from backend.config.model_catalog import LocalModel

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


class ModelPickerScreen(ModalScreen[LocalModel | None]):
    """Lists the models on disk; Enter returns the highlighted one.

    Args:
        list_models: Lists them (on a thread worker).
        current: The loaded model's file, marked in the list (None: none).
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    ModelPickerScreen { align: center middle; }
    #model-picker { width: 90%; height: 80%; border: round $accent; background: $surface;
                    padding: 0 1; }
    #model-picker-title { height: auto; }
    #model-list { height: 1fr; }
    """

    def __init__(self, list_models: ListModels, *, current: Path | None = None) -> None:
        super().__init__()
        self._list_models = list_models
        self._current = current.resolve() if current is not None else None
        self.models: list[LocalModel] = []
        """The models listed (empty until the list is read)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="model-picker"):
            yield Static(Text("Open a model", style="bold"), id="model-picker-title")
            yield Static("Looking for GGUF files…", id="model-picker-note")
            yield OptionList(id="model-list")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
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
        options = self.query_one(OptionList)
        options.clear_options()
        for index, model in enumerate(models):
            loaded = self._current is not None and _same_file(model.path, self._current)
            options.add_option(
                Option(
                    model_line(model, loaded=loaded), id=str(index), disabled=bool(model.problem)
                )
            )
        note = self.query_one("#model-picker-note", Static)
        if models:
            options.highlighted = 0
            note.update(
                Text(
                    f"{len(models)} found (Hugging Face cache, LM Studio, Ollama, llama.cpp's"
                    " cache, the config's model_dirs): Enter opens one, the chat goes on",
                    style="grey70",
                )
            )
        else:
            note.update(
                "No GGUF found in the Hugging Face cache, LM Studio, Ollama, llama.cpp's"
                " cache or the config's model_dirs (`samplescope models` lists the same)."
            )

    def _show_problem(self, problem: str) -> None:
        self.query_one("#model-picker-note", Static).update(
            Text(f"The models could not be listed: {problem}", style="red")
        )

    @on(OptionList.OptionSelected, "#model-list")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(self.models[int(event.option.id)])

    def action_cancel(self) -> None:
        self.dismiss(None)


def _same_file(path: Path, other: Path) -> bool:
    try:
        return path.resolve() == other
    except OSError:
        return False
