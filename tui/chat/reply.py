"""One assistant reply's state, a branch of its turn's reply tree."""

from __future__ import annotations

from dataclasses import dataclass, field

from backend.chat.events import TokenEvent
from sampling.settings import SamplerSettings

FINISH_LABELS = {
    "cancelled": "stopped",
    "error": "error",
    "max_tokens": "max tokens",
    "context_full": "context full",
    "grammar": "grammar dead end",
}
"""What the transcript and the status line say of each way a reply ends but "eos"."""


@dataclass(eq=False)
class Reply:
    """The state of one assistant reply (owned by the app's handlers).

    Attributes:
        seed: The seed it was generated with.
        settings: The settings in force when it started.
        tokens: The sampled tokens so far.
        finished: Why it ended, or "" while it runs.
        error: The error text if it ended in an error.
        turn: Its assistant turn's index in the conversation's messages.
        branch_id: Its id in the chat store (None: not saved).
        parent: The branch it forks from (None: the turn's first reply).
        fork_at: The index of its first own token (tokens before are the parent's).
        tree: Every branch of its turn, oldest first, itself included (one list,
            shared by the branches).
    """

    seed: int
    settings: SamplerSettings
    tokens: list[TokenEvent] = field(default_factory=list)
    finished: str = ""
    error: str = ""
    turn: int = -1
    branch_id: int | None = None
    parent: Reply | None = None
    fork_at: int | None = None
    tree: list[Reply] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self not in self.tree:
            self.tree.append(self)

    @property
    def text(self) -> str:
        """The reply's text so far."""
        return "".join(token.text for token in self.tokens)
