"""The contrast model in the app: a smaller model loaded beside the chat's, or dropped.

`samplescope --contrast-model PATH` and the palette's "Load a contrast model" (the
model picker, its path box behind the same guard) load a smaller model of the same
vocabulary that decodes every reply in step (`SessionBackend.add_contrast`), so that
the contrast sliders (contrast β, α) act as `generate --contrast-model` does; "Drop
the contrast model" frees it. Each runs on a thread worker once no job uses the
model (`GenerationRunner.loading` keeps new ones from starting meanwhile) and posts
how it went; the app's handlers show it and tell the chat's recorder, so that each
reply is stored with the contrast model it ran beside (replay loads it again). A
model that does not fit (another vocabulary or context size) is one line, and the
chat goes on without it. The picker opening another model keeps the contrast model
when it fits the new one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App
from textual.message import Message

from backend.chat.protocol import ModelInfo
from backend.config.model_catalog import LocalModel
from backend.error_log import logged_line
from backend.session.backend import SessionBackend
from backend.store.store import ChatStore, StoreError
from sampling.errors import SamplescopeError
from tui.models.picker import ListModels, ModelPickerScreen
from tui.runner import GenerationRunner
from tui.widgets.status_line import contrast_label

if TYPE_CHECKING:
    from tui.chat.view import ChatView

OpenContrast = Callable[[Path], SessionBackend]
"""Loads a contrast model with the app's options (threads, context...); worker thread."""

PICKER_TITLE = "Load a contrast model (same vocabulary, decoded beside every reply)"
OTHER_SCREEN_OPEN = "Close the other screen first: the contrast model is loaded from the chat."


class ContrastLoaded(Message):
    """The contrast model is loaded beside the model.

    Attributes:
        info: The model's, naming its contrast model (`ModelInfo.contrast_model`).
    """

    def __init__(self, info: ModelInfo) -> None:
        super().__init__()
        self.info = info


class ContrastFailed(Message):
    """The contrast model could not be loaded; the model goes on with the one before,
    if any.

    Attributes:
        error: The user-facing message.
        info: The model's (naming the contrast model before, if any).
    """

    def __init__(self, error: str, info: ModelInfo) -> None:
        super().__init__()
        self.error = error
        self.info = info


class ContrastDropped(Message):
    """The contrast model was freed.

    Attributes:
        info: The model's (no contrast model).
    """

    def __init__(self, info: ModelInfo) -> None:
        super().__init__()
        self.info = info


def attach_contrast(
    open_contrast: OpenContrast,
    path: Path,
    backend: SessionBackend,
    store: ChatStore | None,
    post: Callable[[Message], object],
) -> None:
    """Load the contrast model at `path` beside `backend` and post `ContrastLoaded`, or
    `ContrastFailed` with the one line that says why (worker thread)."""
    try:
        backend.add_contrast(open_contrast(path))
    except SamplescopeError as error:
        post(ContrastFailed(str(error), backend.info))
        return
    except Exception as error:  # an unexpected failure is shown, never a crash
        post(ContrastFailed(logged_line(error), backend.info))
        return
    post(ContrastLoaded(backend.info))
    if store is not None:  # hashed now rather than at the first reply (as the model)
        with contextlib.suppress(StoreError):
            store.model_ref(backend.info.contrast_model)


def detach_contrast(backend: SessionBackend, post: Callable[[Message], object]) -> None:
    """Free `backend`'s contrast model and post `ContrastDropped` (worker thread)."""
    backend.drop_contrast()
    post(ContrastDropped(backend.info))


def no_models() -> tuple[LocalModel, ...]:
    """An app with a fixed model lists none: the picker's path box opens a file."""
    return ()


class ContrastModels:
    """The app's side of the contrast model: which one to load, when, and what the
    chat is told (UI thread only).

    Args:
        app: The app (it shows the picker and the notices, and runs the workers).
        runner: The one model thread; its `loading` names the model being loaded.
        chat: The chat view (a running reply is stopped first).
        store: The chat database (the contrast model is hashed there once loaded).
        list_models: Lists the models the picker offers (None: none listed).
        open_contrast: Loads one with the app's options (None: the app has none).
        wanted: The contrast model to load once the model is (`--contrast-model`).
    """

    def __init__(
        self,
        app: App[None],
        runner: GenerationRunner,
        chat: ChatView,
        store: ChatStore | None,
        list_models: ListModels | None,
        open_contrast: OpenContrast | None,
        wanted: Path | None = None,
    ) -> None:
        self.app = app
        self.runner = runner
        self.chat = chat
        self.store = store
        self.list_models = list_models
        self.open_contrast = open_contrast
        self.wanted = wanted
        """The contrast model asked for (loaded beside every model the chat opens, while
        it fits); None: none."""

    @property
    def loaded(self) -> str:
        """The contrast model loaded beside the model ("": none)."""
        backend = self.runner.backend
        return "" if backend is None else backend.info.contrast_model

    def pick(self) -> None:
        """Show the models on disk; the one chosen is loaded as the contrast model."""
        app = self.app
        why = self._unavailable()
        if why is not None:
            app.notify(why, severity="warning")
            return
        current = Path(self.loaded) if self.loaded else None
        screen = ModelPickerScreen(
            self.list_models or no_models, current=current, title=PICKER_TITLE
        )
        app.push_screen(screen, self._picked)

    def _unavailable(self) -> str | None:
        """Why no contrast model can be loaded or dropped now (None: it can)."""
        if self.open_contrast is None:
            return "This app cannot load a contrast model."
        why = self.runner.unavailable()
        if why is not None:
            return why
        if len(self.app.screen_stack) > 1:  # the palette calls this on any screen
            return OTHER_SCREEN_OPEN
        return None

    def _picked(self, model: LocalModel | None) -> None:
        if model is None:
            return
        why = self._unavailable()
        if why is not None:
            self.app.notify(why, severity="warning")
            return
        if self.chat.stop_then(lambda: self._picked(model)):
            return
        self.wanted = model.path
        self.load()

    def model_loaded(self) -> None:
        """A model is loaded (at the start, or the picker's): the contrast model wanted
        goes beside it."""
        if self.wanted is not None and self.open_contrast is not None and not self.loaded:
            self.load()

    def load(self) -> None:
        """Load the contrast model wanted beside the model, once no job uses it."""
        open_contrast, backend, path = self.open_contrast, self.runner.backend, self.wanted
        if open_contrast is None or backend is None or path is None:
            return
        self.runner.loading = f"the contrast model {path.name}"  # from now on no job starts
        self.runner.cancel()  # a what-if rebuild, say
        self.app.notify(f"Loading the contrast model {path.name}…", timeout=10)

        def work() -> None:
            attach_contrast(open_contrast, path, backend, self.store, self.app.post_message)

        self._when_idle(work)

    def drop(self) -> None:
        """Free the contrast model (replies decode alone again), once no job uses it."""
        backend = self.runner.backend
        why = self._unavailable()
        if why is None and (backend is None or not self.loaded):
            why = "No contrast model is loaded."
        if why is not None:
            self.app.notify(why, severity="warning")
            return
        assert backend is not None
        if self.chat.stop_then(self.drop):
            return
        self.wanted = None
        self.runner.loading = "the contrast model's going"
        self.runner.cancel()
        self._when_idle(lambda: detach_contrast(backend, self.app.post_message))

    def _when_idle(self, work: Callable[[], None]) -> None:
        """Run `work` on a thread worker once no job uses the model."""

        async def when_idle() -> None:
            await self.runner.wait_idle()
            self.app.run_worker(work, thread=True, exclusive=True, group="load")

        self.app.run_worker(when_idle(), group="contrast")

    # -- what the workers posted (the app's handlers call these) -----------------------

    def loaded_beside(self, message: ContrastLoaded) -> None:
        """The contrast model is loaded: said, shown, recorded with the next replies."""
        self.runner.loading = None
        self._show(message.info)
        self.app.notify(
            f"Contrast model {contrast_label(message.info.contrast_model)} loaded: the"
            " sampling panel's contrast β contrasts each reply with it.",
            timeout=10,
        )

    def failed(self, message: ContrastFailed) -> None:
        """The contrast model did not load: the chat goes on with the one before, if
        any, else without one."""
        self.runner.loading = None
        before = message.info.contrast_model
        self.wanted = Path(before) if before else None
        self._show(message.info)
        goes_on = f"with {contrast_label(before)}" if before else "without one"
        self.app.notify(
            f"Could not load the contrast model: {message.error}. The chat goes on {goes_on}.",
            severity="error",
            timeout=20,
        )

    def dropped(self, message: ContrastDropped) -> None:
        """The contrast model was freed."""
        self.runner.loading = None
        self._show(message.info)
        self.app.notify("The contrast model is dropped: replies decode alone.", timeout=10)

    def _show(self, info: ModelInfo) -> None:
        self.chat.show_model(info)
        recorder = self.chat.conversation.recorder
        if recorder is not None:
            recorder.use_contrast(info.contrast_model or None)
