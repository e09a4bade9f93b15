"""What the compare view hands back: the column promoted to be the chat's reply."""

from __future__ import annotations

from dataclasses import dataclass

from backend.chat.events import FinishedEvent, GenerationStats, TokenEvent
from sampling.settings import SamplerSettings


@dataclass(frozen=True, slots=True)
class CompareResult:
    """The column promoted into the chat as the reply (the compare screen's dismiss value).

    Attributes:
        column: Its position in the comparison (0-based).
        label: Its label ("TopK k=40 t=0.8", "temperature=1.2").
        settings: The settings it was sampled with (seed included).
        finished: How its generation ended: reason, figures, text, token ids.
        tokens: Its token events (steps with candidates), for the chat's panels.
    """

    column: int
    label: str
    settings: SamplerSettings
    finished: FinishedEvent
    tokens: tuple[TokenEvent, ...] = ()

    @property
    def text(self) -> str:
        """The reply text."""
        return self.finished.text

    @property
    def token_ids(self) -> tuple[int, ...]:
        """The sampled token ids, in order."""
        return self.finished.token_ids

    @property
    def finish_reason(self) -> str:
        """Why its generation ended ("eos", "max_tokens", ...)."""
        return self.finished.reason

    @property
    def stats(self) -> GenerationStats:
        """Its generation figures."""
        return self.finished.stats
