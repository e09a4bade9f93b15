"""The negative sequence beside a guided reply (classifier-free guidance).

A sequence whose settings switch guidance on when its generation starts
(`sampling.samplers.guidance`) gets a partner: its negative prompt in a sequence of its
own, in its own KV stream, so that both stay exact (`docs/lockstep.md`). The negative
prompt is prefilled as a prompt is (in n_batch chunks, then a steer's given tokens one
at a time), and from then on it is extended with every token the reply takes, in the
same `llama_decode` as the reply's token. Its logits reach the reply's sampler as the
step's second distribution (`StepContext.second`). So each step's two distributions are
exactly what the reply and the negative prompt give decoded alone.

The negative prompt and whether a sequence has a partner are fixed when the
generation starts (its tokens would otherwise be prefilled again mid-reply); the scale
may change between tokens. An empty negative prompt in completion mode, for a model
without a BOS token, has no token to start from: it starts from the prompt's last
token, as transformers' `UnbatchedClassifierFreeGuidanceLogitsProcessor` does when it
is given no unconditional prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from backend.chat.compare import common_prefix
from backend.session.memory import Memory
from backend.session.strategy import Extend
from sampling.settings.record import SamplerSettings

GUIDANCE_LATE = (
    "guidance applies from the next reply: this one started without a negative prompt beside it"
)
"""What a reply is told when guidance is switched on after it started."""

NegativeSource = Callable[[SamplerSettings], list[int]]
"""Gives the negative prompt's tokens for some settings (may raise)."""


@dataclass(slots=True)
class Negative:
    """The negative sequence of one guided sequence.

    Attributes:
        seq_id: Its sequence id (its own KV stream).
        prompt: The negative prompt's tokens.
        logits: Its logits for the reply's next step (None before the prefill).
    """

    seq_id: int
    prompt: list[int] = field(default_factory=list)
    logits: np.ndarray | None = None


def prefill_negative(memory: Memory, negative: Negative, given: Sequence[int]) -> None:
    """Put the negative prompt into its sequence, then the reply's given tokens, as a
    generation's prompt and given tokens go in; keep a copy of its last logits."""
    seq_id = negative.seq_id
    memory.open(seq_id)
    for _ in memory.prefill(negative.prompt, seq_id):
        pass
    for token in given:
        memory.append([token], seq_id)
    negative.logits = np.array(memory.model.logits(-1), copy=True)


def negative_extend(memory: Memory, negative: Negative, reply: Sequence[int]) -> Extend:
    """What the negative sequence decodes next so that it holds its prompt and the
    `reply`'s tokens (`extend_to`)."""
    return extend_to(memory, negative.seq_id, [*negative.prompt, *reply])


def extend_to(memory: Memory, seq_id: int, target: Sequence[int]) -> Extend:
    """What sequence `seq_id` decodes next so that it holds `target`, its last token
    decoded again (its logits are the next step's).

    After a rewind the sequence holds more than that: it is cut back to the start of
    the batch that computed its last kept token, as the reply's sequence is.
    """
    held = memory.tokens(seq_id)
    keep = min(common_prefix(held, target), len(target) - 1)
    if keep < len(held):
        keep = memory.keep(memory.batch_of(keep, seq_id)[0], seq_id)
    return Extend(seq_id, tuple(target[keep:]))
