"""One step's working state: what every unit of the chain reads and cuts.

`Candidates` is the counterpart of llama.cpp's `llama_token_data_array`: the
(penalised) logits, the temperature the next unit reads them at, and the kept set.
Every unit sees one view of the kept set, its tokens in the one order every unit
reads (descending logit, ties by lower id), and asks it questions: how many are
kept, the first k, the weights, those above a logit or a weight ratio, the prefix
that reaches a mass.

Inside, the kept set is held as "the whole vocabulary" until something is cut, then
as token ids in order; each question is answered on the representation at hand
(on the whole vocabulary without sorting it where it can). Most filters keep a
prefix of the order (top-k, top-p, min-p, top-n-sigma, mirostat): as long as only
they cut, the kept set is the first `n_kept` tokens of the order, which the record
and the draw use as a fast path. XTC (which drops the head) and typical-p keep some
other subset, still in that order; `Candidates.prefix` says which case holds. Each
cut is logged, so that the record can name the sampler that removed each of its
rows.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from sampling.errors import LogitsError
from sampling.kept import Ban, Cut, Kept
from sampling.ordering import FloatArray, IdArray, prefix_reaching, sort_descending, top_ids
from sampling.weights import Float64Array, scaled_gaps, vocabulary_weights, weights_of
from sampling.workspace import Workspace

if TYPE_CHECKING:
    from sampling.logits import History
    from sampling.records import CutBy
    from sampling.samplers.guidance_report import GuidanceReport
    from sampling.vocabulary import Vocabulary

_LARGEST_FLOAT32 = float(np.finfo(np.float32).max)


class Candidates:
    """One step's working state, changed in place by each unit of the chain.

    Built afresh every step and dropped with it, so that nothing of a step (the
    caller's logits, a penalised copy of them) outlives it.

    Attributes:
        logits: The logits; the "logits" units (penalties) replace them with a
            rewritten copy (`replace_logits`), never changing the caller's array.
        maximum: The logits' (finite) maximum.
        argmax: Its lowest index.
        history: Token ids so far, for the penalties and DRY.
        workspace: Scratch buffers, kept from step to step by the sampler.
        vocabulary: The model's token texts, for DRY's sequence breakers, or None.
        temperature: The temperature later units and the final distribution read
            the logits at: 1 until the temperature unit sets it.
        ids: The kept set in descending order, or None for the whole vocabulary
            (units ask the methods below rather than read it).
        ranked: What the first cut sorted: the longest known prefix of the order.
        cut_by: The last unit that removed tokens.
        prefix: Whether the kept set is a prefix of the order.
        cuts: Every cut so far (see `Kept.cuts`).
        bans: Each ban so far (`Kept.bans`).
        before: The logits and maximum the record reads when min_tokens or smoothing
            changed them after the rewrites, else None.
        underflow_by: As `Kept.underflow_by`.
        grammar_removed: For the step's record: the mass a grammar removed, or None
            when none ran.
        forced: For the step's record: whether a grammar left exactly one token.
        adapted_target: For the step's record: the target adaptive-p reshaped the
            distribution around, or None.
        guidance: For the step's record: what guidance did, or None when it did nothing.
        contrast: For the step's record: what contrast did, or None when it did nothing.
    """

    __slots__ = (
        "adapted_target",
        "argmax",
        "bans",
        "before",
        "contrast",
        "cut_by",
        "cuts",
        "forced",
        "grammar_removed",
        "guidance",
        "history",
        "ids",
        "logits",
        "maximum",
        "prefix",
        "ranked",
        "temperature",
        "underflow_by",
        "vocabulary",
        "weights_memo",
        "workspace",
    )

    def __init__(
        self,
        logits: FloatArray,
        maximum: float,
        argmax: int,
        history: History,
        workspace: Workspace,
        vocabulary: Vocabulary | None = None,
    ) -> None:
        self.logits = logits
        self.maximum = maximum
        self.argmax = argmax
        self.history = history
        self.workspace = workspace
        self.vocabulary = vocabulary
        self.temperature = 1.0
        self.ids: IdArray | None = None
        self.ranked: IdArray | None = None
        self.cut_by: CutBy = "none"
        self.prefix = True
        self.cuts: list[Cut] = []
        self.bans: list[Ban] = []
        self.before: tuple[FloatArray, float] | None = None
        self.underflow_by = "temperature"
        self.grammar_removed: float | None = None
        self.forced = False
        self.adapted_target: float | None = None
        self.guidance: GuidanceReport | None = None
        self.contrast: GuidanceReport | None = None
        self.weights_memo: tuple[object, object, float, Float64Array] | None = None

    # --- the kept set, one view -------------------------------------------------------

    @property
    def size(self) -> int:
        """How many tokens are kept."""
        ids = self.ids
        return int(self.logits.shape[0] if ids is None else ids.shape[0])

    @property
    def top(self) -> float:
        """The kept set's highest logit: the maximum, unless XTC or typical-p removed it.

        Weights of kept tokens are taken against it, so that they cannot all
        underflow when the kept set lies far below a removed head.
        """
        ids = self.ids
        return self.maximum if ids is None else float(self.logits[ids[0]])

    def head(self, count: int) -> IdArray:
        """The first `count` kept tokens in order (count at most `size`)."""
        ids = self.ids
        if ids is not None:
            return ids[:count]
        if count == 1:
            return np.array([self.argmax], dtype=np.intp)
        return top_ids(self.logits, count)

    def ordered(self) -> IdArray:
        """Every kept token in order (the whole vocabulary sorted once, then known)."""
        ids = self.ids
        if ids is not None:
            return ids
        size = self.logits.shape[0]
        ranked = self.ranked
        if ranked is not None and ranked.shape[0] == size:
            return ranked
        ranked = self.ranked = sort_descending(self.logits, np.arange(size))
        return ranked

    def kept_logits(self) -> FloatArray:
        """The kept tokens' logits: by token id over the whole vocabulary until a
        cut, then in order. Only order-free figures (a sum, a maximum, a count)
        should be read off it."""
        ids = self.ids
        return self.logits if ids is None else self.logits[ids]

    def weights(self) -> Float64Array:
        """exp((logit - top) / temperature) of the kept tokens, as `kept_logits` lays
        them out (over the whole vocabulary: a scratch buffer). Never write to it."""
        ids = self.ids
        if ids is not None:
            return self.kept_weights()
        return vocabulary_weights(
            self.logits,
            self.maximum,
            self.temperature,
            self.workspace.array("filter-weights", self.logits.shape[0], np.float64),
        )

    def head_of(self, values: Float64Array, count: int) -> Float64Array:
        """The entries of an array laid out as `kept_logits` for the first `count` kept
        tokens, in order."""
        if self.ids is not None:
            return values[:count]
        return values[self.head(count)]

    def gaps(self, scratch: str) -> Float64Array:
        """(logit - top) / temperature of the kept tokens, laid out as `kept_logits`;
        over the whole vocabulary in the scratch buffer named `scratch`."""
        ids = self.ids
        if ids is not None:
            return scaled_gaps(self.logits, self.top, self.temperature, ids)
        out = self.workspace.array(scratch, self.logits.shape[0], np.float64)
        return scaled_gaps(self.logits, self.maximum, self.temperature, None, out)

    def scratch(self, name: str) -> Float64Array:
        """An uninitialised float64 array the length of `kept_logits`."""
        ids = self.ids
        if ids is not None:
            return np.empty(ids.shape[0])
        return self.workspace.array(name, self.logits.shape[0], np.float64)

    def token_at(self, position: int) -> int:
        """The token id at a position of `kept_logits`."""
        ids = self.ids
        return position if ids is None else int(ids[position])

    def in_order(self, *values: Float64Array) -> tuple[IdArray, tuple[Float64Array, ...]]:
        """Every kept token in order, with arrays laid out as `kept_logits` reordered
        alike."""
        if self.ids is not None:
            return self.ids, values
        ordered = self.ordered()
        return ordered, tuple(value[ordered] for value in values)

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

    def logits_at_least(self, bound: float) -> IdArray | None:
        """The kept tokens whose logit is at least `bound` (a prefix of the order), or
        None when every kept token is."""
        ids = self.ids
        logits = self.logits
        if ids is not None:
            keep = int(np.count_nonzero(logits[ids] >= bound))  # a prefix: ids are in order
            return ids[:keep] if keep < ids.shape[0] else None
        band = np.flatnonzero(logits >= bound)
        return sort_descending(logits, band) if band.shape[0] < logits.shape[0] else None

    def weights_at_least(self, ratio: float) -> tuple[IdArray, IdArray | None, Float64Array] | None:
        """The kept tokens at least `ratio` times as probable as the top kept one.

        Returns:
            None when every kept token is; else those tokens in order (a prefix), a
            longer prefix of the order sorted on the way (or None), and their
            weights.
        """
        ids = self.ids
        logits = self.logits
        if ids is not None:
            # Against the kept set's own top (XTC or typical-p may have removed the maximum).
            ratios = self.kept_weights()
            keep = int(np.count_nonzero(ratios >= ratio))
            if keep >= ids.shape[0]:
                return None
            return ids[:keep], None, ratios[:keep]
        # p_i / p_max = exp((x_i - max) / T) >= ratio  <=>  x_i >= max + T ln(ratio);
        # select a little below that bound, then decide exactly in float64.
        bound = self.maximum + self.temperature * math.log(ratio)
        lowest = bound - 1e-3 * (1.0 + abs(bound))
        if lowest < -_LARGEST_FLOAT32 and logits.dtype == np.float32:
            lowest = -math.inf  # compared in float32, it would round there anyway
        band = sort_descending(logits, np.flatnonzero(logits >= lowest))
        ratios = weights_of(logits, self.maximum, self.temperature, band)
        keep = int(np.count_nonzero(ratios >= ratio))
        if keep >= logits.shape[0]:
            return None
        # The sorted band is a longer prefix of the order.
        return band[:keep], band, ratios[:keep]

    def mass_prefix(
        self, fraction: float, *, of_vocabulary: bool = False
    ) -> tuple[IdArray, IdArray | None, Float64Array] | None:
        """The shortest prefix of the order whose mass reaches `fraction` of the kept
        mass (the crossing token kept), or of the whole vocabulary's mass.

        Returns:
            None when that prefix is every kept token; else the prefix, a longer
            prefix of the order sorted on the way (or None), and its weights.
        """
        logits = self.logits
        ids = self.ids
        total = 0.0
        if ids is None or of_vocabulary:
            maximum = self.top
            all_weights = vocabulary_weights(
                logits,
                maximum,
                self.temperature,
                self.workspace.array("filter-weights", logits.shape[0], np.float64),
            )
            total = float(all_weights.sum())
            if ids is None:
                prefix, ranked = prefix_reaching(
                    logits, maximum, self.temperature, all_weights, fraction * total
                )
                if prefix.shape[0] >= logits.shape[0]:
                    return None
                return prefix, ranked, all_weights[prefix]
        assert ids is not None
        weights = self.kept_weights()
        if of_vocabulary:
            # candle's TopKThenTopP: p against the whole vocabulary's mass.
            if fraction >= float(weights.sum()) / total:
                return None
        else:
            total = float(weights.sum())
        cumulative = np.cumsum(weights)
        cumulative /= total
        keep = int(np.searchsorted(cumulative, fraction, side="left")) + 1
        if keep >= ids.shape[0]:
            return None
        return ids[:keep], None, weights[:keep]

    # --- changes ----------------------------------------------------------------------

    def replace_logits(self, logits: FloatArray) -> None:
        """Hand the later units a rewritten copy of the logits, with its new maximum.

        Raises:
            LogitsError: Every logit is -inf.
        """
        argmax = int(np.argmax(logits))
        maximum = float(logits[argmax])
        if maximum == -math.inf:
            raise LogitsError("the logit bias bans every token: nothing is left to sample")
        self.logits = logits
        self.argmax = argmax
        self.maximum = maximum

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
            tuple(self.bans),
            self.underflow_by,
        )
