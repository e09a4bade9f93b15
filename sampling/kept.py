"""What the chain hands the draw: the distribution it ends with (`Kept`).

`sampling.candidates.Candidates` builds it; at temperature 0 it is the argmax alone
(`greedy_kept`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sampling.ordering import IdArray
from sampling.weights import Float64Array

if TYPE_CHECKING:
    from sampling.records import CutBy


@dataclass(frozen=True, slots=True)
class Kept:
    """The distribution after the filters.

    Attributes:
        ids: Kept token ids in descending order, or None when the whole vocabulary
            is kept.
        probs: With `ids`, their probabilities (same order, summing to 1); without,
            the probability of every token indexed by id (a workspace buffer: valid
            until the workspace is used again).
        cut_by: The last sampler that removed tokens.
        n_kept: Tokens with a nonzero probability. Probability falls with the logit,
            so they are the first `n_kept` of `ids` (a -inf logit or an underflow at
            a low temperature counts as not kept).
        ranked: A known prefix of the order, which may run past the kept set (what
            the first cut sorted: top-k's ranking, top-p's bands); None when nothing
            was ranked.
        prefix: Whether the kept set is a prefix of the order (every cut was).
        cuts: Each cut in turn: the sampler's name, the ids it kept, and whether
            they were a prefix of the order.
        temperature: The temperature the probabilities were computed at.
        bans: Each ban (-inf logits): the banning sampler's name and the ids it banned.
        underflow_by: Who zeroed a finite logit no cut removed ("temperature", "smoothing").
    """

    ids: IdArray | None
    probs: Float64Array
    cut_by: CutBy
    n_kept: int
    ranked: IdArray | None = None
    prefix: bool = True
    cuts: tuple[Cut, ...] = ()
    temperature: float = 1.0
    bans: tuple[Ban, ...] = ()
    underflow_by: str = "temperature"


Cut = tuple[str, IdArray, bool]
"""One cut: the sampler's name, the ids it kept (in order), whether a prefix of the order."""

Ban = tuple[str, tuple[int, ...]]
"""One ban: the sampler's name and the token ids it set to -inf."""


# The greedy distribution's one probability, shared (read-only) by every greedy step.
_CERTAIN = np.ones(1)
_CERTAIN.flags.writeable = False


def greedy_kept(argmax: int, bans: tuple[Ban, ...] = (), cuts: tuple[Cut, ...] = ()) -> Kept:
    """The kept set at temperature 0: the argmax alone (`bans`: as `Kept.bans`; `cuts`:
    those before the argmax was taken, a grammar's)."""
    ids = np.array([argmax], dtype=np.intp)
    prefix = all(is_prefix for _, _, is_prefix in cuts)
    every = (*cuts, ("greedy", ids, True))
    return Kept(ids, _CERTAIN, "greedy", 1, None, prefix, every, 0.0, bans)
