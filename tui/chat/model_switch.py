"""Opening another model while the app runs (the model picker): the chat goes on.

The new model loads on a thread worker while the old one stays loaded, so that a
failure leaves the app as it was; once the new one is loaded the old one is freed
(after the generation stopped for the switch has let go of it) and `BackendReady`
makes the new one the chat's. The conversation is kept: the next reply prefills it
on the new model, and is saved as a new chat of that model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.message import Message

from backend.session.backend import SessionBackend
from backend.store.store import ChatStore
from tui.chat.loading import load_backend
from tui.chat.runner import GenerationRunner

OpenModel = Callable[[Path], SessionBackend]
"""Loads a model file with the app's options (threads, context...); worker thread."""


class ModelSwitchFailed(Message):
    """The model picked could not be loaded; the one before stays.

    Attributes:
        error: The user-facing message.
        previous: The model still loaded (None: there was none).
    """

    def __init__(self, error: str, previous: SessionBackend | None) -> None:
        super().__init__()
        self.error = error
        self.previous = previous


def switch_model(
    open_model: OpenModel,
    path: Path,
    previous: SessionBackend | None,
    runner: GenerationRunner,
    store: ChatStore | None,
    post: Callable[[Message], object],
) -> None:
    """Load `path`, free `previous`, post `BackendReady`; or post `ModelSwitchFailed`
    (worker thread)."""

    def load() -> SessionBackend:
        backend = open_model(path)
        if previous is not None:
            runner.close_after_use(previous)
        return backend

    load_backend(load, store, post, failed=lambda error: ModelSwitchFailed(error, previous))
