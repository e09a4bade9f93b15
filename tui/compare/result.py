"""What the compare view hands back: the column promoted to be the chat's reply."""

from __future__ import annotations

from dataclasses import dataclass, replace

from backend.chat.events import FinishedEvent, GenerationStats, TokenEvent
from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class CompareResult:
    """The column promoted into the chat as the reply (the compare screen's dismiss value).

    Attributes:
        column: Its position in the comparison (0-based).
        label: Its label ("TopK k=40 t=0.8", "temperature=1.2").
        settings: The settings it was sampled with (seed included).
        finished: How its generation ended: reason, figures, text, token ids.
        tokens: Its token events (steps with candidates), for the chat's panels.
        branch_at: When set, the reply is then redone from this token (an
            alternative chosen in the column), with the chat's live settings.
        force: The token chosen there (None: drawn again).
    """

    column: int
    label: str
    settings: SamplerSettings
    finished: FinishedEvent
    tokens: tuple[TokenEvent, ...] = ()
    branch_at: int | None = None
    force: int | None = None

    def branched(self, at: int | None, force: int | None) -> CompareResult:
        """The same column, to be branched once adopted: from token `at` (None: not
        branched), with `force` chosen there (None: drawn again)."""
        return replace(self, branch_at=at, force=force)

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
