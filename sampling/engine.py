"""What the chain works on and what it hands the draw.

`Candidates` is one step's working state, the counterpart of llama.cpp's
`llama_token_data_array`: the (penalised) logits, the temperature the next unit
reads them at, and the kept set. The kept set is held as "the whole vocabulary"
until something is cut, then as token ids in the one order every unit reads
(descending logit, ties by lower id). Most filters keep a prefix of that order
(top-k, top-p, min-p, top-n-sigma, mirostat): as long as only they cut, the kept
set is the first `n_kept` tokens of the order, which the record and the draw use
as a fast path. XTC (which drops the head) and typical-p keep some other subset,
still in that order; `Candidates.prefix` says which case holds. Each cut is logged,
so that the record can name the sampler that removed each of its rows. `Kept` is
the distribution the chain ends with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from sampling.errors import LogitsError
from sampling.ordering import FloatArray, IdArray, sort_descending
from sampling.workspace import Workspace

if TYPE_CHECKING:
    from sampling.penalties import History
    from sampling.records import CutBy

Float64Array = npt.NDArray[np.float64]


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
    """

    ids: IdArray | None
    probs: Float64Array
    cut_by: CutBy
    n_kept: int
    ranked: IdArray | None = None
    prefix: bool = True
    cuts: tuple[Cut, ...] = ()
    temperature: float = 1.0


Cut = tuple[str, IdArray, bool]
"""One cut: the sampler's name, the ids it kept (in order), whether a prefix of the order."""


class Candidates:
    """One step's working state, changed in place by each unit of the chain.

    Built afresh every step and dropped with it, so that nothing of a step (the
    caller's logits, a penalised copy of them) outlives it.

    Attributes:
        logits: The logits; the "logits" units (penalties) replace them with a
            rewritten copy, never changing the caller's array.
        maximum: The logits' (finite) maximum.
        argmax: Its lowest index.
        history: Token ids so far, for the penalties.
        workspace: Scratch buffers, kept from step to step by the sampler.
        temperature: The temperature later units and the final distribution read
            the logits at: 1 until the temperature unit sets it.
        ids: The kept set in descending order, or None for the whole vocabulary.
        ranked: What the first cut sorted: the longest known prefix of the order.
        cut_by: The last unit that removed tokens.
        prefix: Whether the kept set is a prefix of the order.
        cuts: Every cut so far (see `Kept.cuts`).
        mirostat_mu: Mirostat's mu for this step (the sampler's state), or None.
        xtc_roll: XTC's coin for this step, in [0, 1): XTC applies unless it is
            above `xtc_probability` (0.0, the default, always applies).
        vocabulary: The model's token texts, for DRY's sequence breakers, or None.
    """

    __slots__ = (
        "argmax",
        "cut_by",
        "cuts",
        "history",
        "ids",
        "logits",
        "maximum",
        "mirostat_mu",
        "prefix",
        "ranked",
        "temperature",
        "vocabulary",
        "weights_memo",
        "workspace",
        "xtc_roll",
    )

    def __init__(
        self,
        logits: FloatArray,
        maximum: float,
        argmax: int,
        history: History,
        workspace: Workspace,
    ) -> None:
        self.logits = logits
        self.maximum = maximum
        self.argmax = argmax
        self.history = history
        self.workspace = workspace
        self.temperature = 1.0
        self.ids: IdArray | None = None
        self.ranked: IdArray | None = None
        self.cut_by: CutBy = "none"
        self.prefix = True
        self.cuts: list[Cut] = []
        self.mirostat_mu: float | None = None
        self.xtc_roll = 0.0
        self.vocabulary: object | None = None
        self.weights_memo: tuple[object, object, float, Float64Array] | None = None

    @property
    def top(self) -> float:
        """The kept set's highest logit: the maximum, unless XTC or typical-p removed it.

        Weights of kept tokens are taken against it, so that they cannot all
        underflow when the kept set lies far below a removed head.
        """
        ids = self.ids
        return self.maximum if ids is None else float(self.logits[ids[0]])

    def kept_weights(self) -> Float64Array:
        """exp((logit - top) / temperature) of the kept set (which must be cut), in order.

        Taken from the memo when a unit already computed them for this very kept set,
        logits and temperature (the filters and the final distribution each need
        them); never write to the array returned.
        """
        ids = self.ids
        assert ids is not None
        memo = self.weights_memo
        if (
            memo is not None
            and memo[1] is ids
            and memo[0] is self.logits
            and memo[2] == self.temperature
        ):
            return memo[3]
        weights = weights_of(self.logits, self.top, self.temperature, ids)
        self.weights_memo = (self.logits, ids, self.temperature, weights)
        return weights

    def cut(
        self,
        ids: IdArray,
        by: CutBy,
        ranked: IdArray | None = None,
        *,
        prefix: bool = True,
        weights: Float64Array | None = None,
    ) -> None:
        """Keep only `ids`, a subset of the kept set in order, cut by the unit `by`.

        Args:
            ids: The new kept set, in order.
            by: The unit's name, for the record.
            ranked: A longer prefix of the order the unit sorted on the way, if any.
            prefix: Whether `ids` is a prefix of the current kept set (a filter by
                rank or by probability); False for XTC and typical-p.
            weights: The new kept set's weights as `kept_weights` gives them, when
                the unit has them (remembered for the next reader).
        """
        if weights is not None:
            self.weights_memo = (self.logits, ids, self.temperature, weights)
        if prefix and self.prefix and self.ranked is None:
            # The first prefix cut holds the longest prefix: later ones only shorten it.
            self.ranked = ids if ranked is None else ranked
        elif ranked is not None and self.ranked is None:
            self.ranked = ranked
        self.prefix = self.prefix and prefix
        self.ids = ids
        self.cut_by = by
        self.cuts.append((by, ids, prefix))

    def distribution(self) -> Kept:
        """The kept tokens' probabilities at the temperature the chain reached."""
        ids = self.ids
        if ids is None:
            size = self.logits.shape[0]
            weights = vocabulary_weights(
                self.logits,
                self.maximum,
                self.temperature,
                self.workspace.array("weights", size, np.float64),
            )
            weights /= weights.sum()
        else:
            kept_weights = self.kept_weights()
            weights = kept_weights / kept_weights.sum()
        return Kept(
            ids,
            weights,
            self.cut_by,
            int(np.count_nonzero(weights)),
            self.ranked,
            self.prefix,
            tuple(self.cuts),
            self.temperature,
        )


def ordered_ids(candidates: Candidates) -> IdArray:
    """The kept set in order, the whole vocabulary sorted when nothing was cut yet."""
    if candidates.ids is not None:
        return candidates.ids
    size = candidates.logits.shape[0]
    ranked = candidates.ranked
    if ranked is not None and ranked.shape[0] == size:
        return ranked
    return sort_descending(candidates.logits, np.arange(size))


def replace_logits(candidates: Candidates, logits: FloatArray) -> None:
    """Hand the later units a rewritten copy of the logits, with its new maximum.

    Raises:
        LogitsError: Every logit is -inf.
    """
    argmax = int(np.argmax(logits))
    maximum = float(logits[argmax])
    if maximum == -math.inf:
        raise LogitsError("the logit bias bans every token: nothing is left to sample")
    candidates.logits = logits
    candidates.argmax = argmax
    candidates.maximum = maximum


def weights_of(
    logits: FloatArray, maximum: float, temperature: float, token_ids: IdArray
) -> Float64Array:
    """exp((logit - max) / temperature) in float64 for some token ids."""
    shifted = logits[token_ids].astype(np.float64)
    shifted -= maximum
    if temperature != 1.0:
        divide_by_temperature(shifted, temperature, logits.dtype)
    return np.exp(shifted, out=shifted)


def vocabulary_weights(
    logits: FloatArray, maximum: float, temperature: float, out: Float64Array
) -> Float64Array:
    """exp((logit - max) / temperature) in float64 for the whole vocabulary, into `out`."""
    np.copyto(out, logits)  # widen first: float32 - float would round in float32
    out -= maximum
    if temperature != 1.0:
        divide_by_temperature(out, temperature, logits.dtype)
    return np.exp(out, out=out)


def scaled_gaps(
    logits: FloatArray,
    top: float,
    temperature: float,
    token_ids: IdArray | None,
    out: Float64Array | None = None,
) -> Float64Array:
    """(logit - top) / temperature in float64: the exponent of `weights_of`.

    Args:
        logits: The logits.
        top: The logit the gaps are taken from.
        temperature: The temperature.
        token_ids: Which tokens (in that order); None for the whole vocabulary by id.
        out: For the whole vocabulary, the array to write into.
    """
    if token_ids is None:
        gaps = np.empty(logits.shape[0]) if out is None else out
        np.copyto(gaps, logits)  # widen first: float32 - float would round in float32
    else:
        gaps = logits[token_ids].astype(np.float64)
    gaps -= top
    if temperature != 1.0:
        divide_by_temperature(gaps, temperature, logits.dtype)
    return gaps


_LARGEST_FLOAT64 = float(np.finfo(np.float64).max)
# The widest gap between two finite float32 logits, which float64 holds exactly.
_FLOAT32_SPAN = 2.0 * float(np.finfo(np.float32).max)


def divide_by_temperature(gaps: Float64Array, temperature: float, source: np.dtype[Any]) -> None:
    """gaps /= temperature, in place; a quotient past float64's range becomes -inf.

    Gaps between float32 logits are at most 6.8e38: dividing them overflows only
    below a temperature of about 4e-270, so the common case skips numpy's error-state
    switch (which costs more than the division). Gaps between float64 logits can
    overflow at any temperature below 1.
    """
    span = _FLOAT32_SPAN if source == np.float32 else math.inf
    if temperature * _LARGEST_FLOAT64 >= span:
        gaps /= temperature
    else:
        with np.errstate(over="ignore"):  # a gap past float64 at a low T: weight 0
            gaps /= temperature


# The greedy distribution's one probability, shared (read-only) by every greedy step.
_CERTAIN = np.ones(1)
_CERTAIN.flags.writeable = False


def greedy_kept(argmax: int) -> Kept:
    """The kept set at temperature 0: the argmax alone."""
    ids = np.array([argmax], dtype=np.intp)
    return Kept(ids, _CERTAIN, "greedy", 1, None, True, (("greedy", ids, True),), 0.0)
