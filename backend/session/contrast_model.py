"""The smaller model beside the reply (contrast): the same text, decoded in step.

With a contrast model (`--contrast-model`), every sequence of a generation has a twin
in the smaller model's memory: the same prompt, prefilled there as every prompt is
(`Session.prepare`), the same given tokens, and then each token the sequence takes,
all the twins of a step in one `llama_decode` of the smaller model. Each twin keeps
its own KV stream there, as the sequences do in the large model, so both models'
logits are exactly what each gives alone. The twin's logits reach the sequence's
sampler with each step (`StepContext.small`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from backend.session.negative import extend_to
from backend.session.session import PromptSource, Room, Session
from backend.session.strategy import Decodes, Plan, carry_out
from sampling.errors import SamplescopeError

NO_TWINS = (
    "contrast needs a smaller model beside this one: --contrast-model, or in the app the"
    ' palette\'s "Load a contrast model"'
)
"""What a reply is told when its settings ask for contrast and no smaller model is loaded."""


class Twins:
    """The smaller model's copies of a generation's sequences.

    Args:
        session: The smaller model and its memory.
        count: How many sequences the generation runs (ids 0 .. count - 1).
    """

    def __init__(self, session: Session, count: int) -> None:
        if count > session.model.n_seq_max:
            raise SamplescopeError(
                f"{count} sequences at once: the contrast model holds {session.model.n_seq_max}"
            )
        self.session = session
        self.count = count
        self.prompt: list[int] = []
        self.logits: list[np.ndarray | None] = [None] * count
        """Each sequence's small-model logits for its next step."""

    def prepare(
        self, prompt: Sequence[int], max_tokens: int, room: Room, given: Sequence[int]
    ) -> None:
        """Prefill the large model's prompt tokens and the given tokens into the smaller
        model, as the large model's are, and share them with every twin.

        Raises:
            SamplescopeError: They cannot be fed.
        """
        memory = self.session.memory
        tokens = list(prompt)
        source: PromptSource = lambda: (tokens, [])  # noqa: E731
        prepared, _ = self.session.prepare_quietly(
            source, max_tokens, Room(room.layout, self.count, room.extra_cells)
        )
        self.prompt = prepared.prompt
        for token in given:
            memory.append([token])
        first = np.array(memory.model.logits(-1), copy=True)
        for seq_id in range(1, self.count):
            memory.fork(seq_id)
        self.logits = [first] * self.count

    def step(self, reply: dict[int, Sequence[int]]) -> None:
        """Decode each sequence's latest token in its twin (`reply`: each stepping
        sequence's tokens so far), all in one batch; keep each twin's logits."""
        memory = self.session.memory
        extends = [
            extend_to(memory, seq_id, [*self.prompt, *tokens]) for seq_id, tokens in reply.items()
        ]
        rows = carry_out(memory, Plan(extends), True, Decodes())
        for seq_id, logits in zip(reply, rows, strict=True):
            self.logits[seq_id] = np.array(logits, copy=True)

    def close(self) -> None:
        """Give back the twins' memory (the smaller model's chat context comes back)."""
        memory = self.session.memory
        for seq_id in range(1, self.count):
            memory.drop(seq_id)
        if not memory.model.lost:
            memory.reserve(1, 0)
