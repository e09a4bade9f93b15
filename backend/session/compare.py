"""One prompt under several sampler settings: the columns of the compare view.

The columns run in lockstep (`SessionBackend.generate_many`): the prompt is
prefilled once and shared, and every step decodes one token of every live column
in one batch, so the columns stream at once. Each column is seeded from its own
settings' seed. `sequential` runs them one after the other instead (as `generate`
would, one by one: after the first, the prompt comes from the memory).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from backend.chat.compare import ColumnEvent
from backend.chat.completion import Mode, as_document
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.backend import SessionBackend
from sampling.settings.record import SamplerSettings


def compare(
    backend: SessionBackend,
    messages: Sequence[ChatMessage],
    settings_list: Sequence[SamplerSettings],
    *,
    max_tokens: int,
    cancel: threading.Event | None = None,
    raw: bool = False,
    sequential: bool = False,
) -> Iterator[ColumnEvent]:
    """Generate a reply to `messages` once per settings.

    Each column ends with its own FinishedEvent; a cancel stops every column still
    running (each finishes as "cancelled"; in sequential order, the columns not
    started yet are left out). More columns than the model holds sequences run one
    after the other.

    Args:
        backend: The model.
        messages: The conversation (ending with a user turn).
        settings_list: One settings record per column.
        max_tokens: The reply length limit of every column.
        cancel: Stops the comparison.
        raw: Feed the last message without the chat template.
        sequential: One column after the other instead of in lockstep.
    """
    if not sequential and 1 < len(settings_list) <= backend.model.n_seq_max:
        lives = [LiveSettings(settings) for settings in settings_list]
        for column, event in backend.generate_many(
            messages, lives, max_tokens=max_tokens, cancel=cancel, raw=raw
        ):
            yield ColumnEvent(column, event)
        return
    for column, settings in enumerate(settings_list):
        if cancel is not None and cancel.is_set():
            return
        for event in backend.generate(
            messages, LiveSettings(settings), max_tokens=max_tokens, cancel=cancel, raw=raw
        ):
            yield ColumnEvent(column, event)


@dataclass(frozen=True, slots=True)
class CompareJob:
    """A comparison to run on a model's thread: called with the backend and the cancel
    flag, it yields `compare`'s events.

    Attributes:
        messages: The conversation (ending with a user turn).
        settings_list: One settings record per column.
        max_tokens: The reply length limit of every column.
        mode: "chat", or "completion": the conversation is one document, continued
            as the chat's reply continues it.
        sequential: One column after the other instead of in lockstep.
    """

    messages: Sequence[ChatMessage]
    settings_list: Sequence[SamplerSettings]
    max_tokens: int
    mode: Mode = "chat"
    sequential: bool = False

    def __call__(self, backend: SessionBackend, cancel: threading.Event) -> Iterator[ColumnEvent]:
        """Run the comparison (the model's thread)."""
        raw = self.mode == "completion"
        return compare(
            backend,
            as_document(self.messages) if raw else self.messages,
            self.settings_list,
            max_tokens=self.max_tokens,
            cancel=cancel,
            raw=raw,
            sequential=self.sequential,
        )
