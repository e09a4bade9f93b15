"""One prompt under several sampler settings: the columns of the compare view.

Columns are generated one after the other on the same backend (one llama context,
one thread). Each column is seeded from its own settings' seed, so a column is the
same reply `generate` gives with those settings; after the first column the prompt
comes from the KV cache, so later columns prefill only one token.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from backend.chat.events import GenerationEvent
from backend.chat.protocol import ChatBackend, ChatMessage, LiveSettings
from sampling.settings import SamplerSettings


@dataclass(frozen=True, slots=True)
class ColumnEvent:
    """An event of one column's generation.

    Attributes:
        column: The index of the settings in the list given to `compare`.
        event: The generation event.
    """

    column: int
    event: GenerationEvent


def compare(
    backend: ChatBackend,
    messages: Sequence[ChatMessage],
    settings_list: Sequence[SamplerSettings],
    *,
    max_tokens: int,
    cancel: threading.Event | None = None,
    raw: bool = False,
) -> Iterator[ColumnEvent]:
    """Generate a reply to `messages` once per settings, column after column.

    Each column ends with its own FinishedEvent; a cancel stops the current column
    (which finishes as "cancelled") and the columns after it are not started.

    Args:
        backend: The model.
        messages: The conversation (ending with a user turn).
        settings_list: One settings record per column.
        max_tokens: The reply length limit of every column.
        cancel: Stops the comparison.
        raw: Feed the last message without the chat template.
    """
    for column, settings in enumerate(settings_list):
        if cancel is not None and cancel.is_set():
            return
        for event in backend.generate(
            messages, LiveSettings(settings), max_tokens=max_tokens, cancel=cancel, raw=raw
        ):
            yield ColumnEvent(column, event)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens two sequences share."""
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        shared += 1
    return shared


def first_divergence(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The index of the first token where two replies differ, or None if they are equal.

    When one reply is a prefix of the other, they diverge where the shorter one ends.
    """
    shared = common_prefix(a, b)
    return None if shared == len(a) == len(b) else shared
