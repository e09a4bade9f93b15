"""What the chat's screen needs from the app that hosts it (so that it does not import
the app, which imports it)."""

from __future__ import annotations

from typing import Protocol

from backend.session.sweep_result import SweepResult
from backend.store.store import ChatStore
from tui.models.switch import ModelSwitcher
from tui.runner import GenerationRunner


class ChatHost(Protocol):
    """The app-wide state and actions the chat's keys reach: the runner, the store, the
    live settings and the model picker."""

    @property
    def runner(self) -> GenerationRunner:
        """Runs every generation on the one model thread."""
        ...

    @property
    def store(self) -> ChatStore | None:
        """The chat database, or None (nothing saved)."""
        ...

    @property
    def switcher(self) -> ModelSwitcher:
        """Opens another model while the app runs."""
        ...

    def chat_mounted(self) -> None:
        """The chat's widgets are up: apply the config's chat settings, load the model."""
        ...

    def apply_setting(self, field: str, value: object) -> bool:
        """Make one setting live from the next token; False (and a notice) if refused."""
        ...

    def open_saved_chat(self, chat_id: int | None) -> None:
        """Make saved chat `chat_id` the conversation (None: nothing to do)."""
        ...

    def open_sweep(self, result: SweepResult) -> None:
        """Show a kept sweep's frontier over the chat (its samples open as chats)."""
        ...
