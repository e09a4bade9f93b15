"""One assistant reply's state, a branch of its turn's reply tree."""

from __future__ import annotations

from dataclasses import dataclass, field

from backend.chat.events import TokenEvent
from sampling.analysis.loops import Loop
from sampling.settings.record import SamplerSettings

REJECTED = "rejected"
"""A ghost's finish: an attempt a phrase ban rejected (`backend.store.records.REJECTED`)."""

FINISH_LABELS = {
    "cancelled": "stopped",
    "error": "error",
    "max_tokens": "max tokens",
    "context_full": "context full",
    "banned": "every token tried here held a banned phrase",
    "grammar": "grammar dead end",
    "loop": "stopped on a loop",
}
"""What the transcript and the status line say of each way a reply ends but "eos"."""
GHOST_LABEL = "rejected: a banned phrase"
"""What a ghost branch's end says."""


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
        ghosts: The attempts phrase bans rejected while it ran (each a branch of the
            tree), in order.
        model: The path of the model file that made it ("": not known). Its token
            ids are that model's: another model cannot branch from them.
        loop: The latest repetition loop found in it (None: none, or not watched).
        context_tokens: The tokens its generation's context held when it ended, its
            prompt included (None: not known, or it runs).
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
    ghosts: list[Reply] = field(default_factory=list)
    model: str = ""
    loop: Loop | None = None
    context_tokens: int | None = None

    @property
    def is_ghost(self) -> bool:
        """Whether it is an attempt a phrase ban rejected (drawn greyed)."""
        return self.finished == REJECTED

    def __post_init__(self) -> None:
        if self not in self.tree:
            self.tree.append(self)

    @property
    def text(self) -> str:
        """The reply's text so far."""
        return "".join(token.text for token in self.tokens)
