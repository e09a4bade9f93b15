"""The sampler units: each step of the chain is one small unit behind one interface.

As in llama.cpp's `llama_sampler_i` (src/llama-sampling.cpp) and Hugging Face's
logits processors, a unit has a `name` (llama.cpp's `--samplers` name) and an
`apply` that changes the step's `Candidates` in place; a chain is a list of units
(sampling/chain.py). A unit is built from the settings once, when they change, and
holds its own parameters; a unit the settings turn off is not built at all.

Units come in two kinds, and a chain keeps them in this order:

- "logits" units rewrite the whole vocabulary's logits before anything reads
  their order (the penalties; llama.cpp's dry and logit bias are of this kind).
- "candidates" units read the order. A filter keeps a shorter prefix of it and
  names itself as the cut; the temperature sets the temperature the later units
  and the final distribution read the logits at.

Adding a sampler: a frozen dataclass with `name`, `kind`, `from_settings` and
`apply`, listed in `sampling.chain.SAMPLERS`. A filter that keeps a prefix of the
order says so to `Candidates.cut` (the record's fast path); one that keeps another
subset (XTC, typical-p) passes `prefix=False`. The newer samplers live in
`sampling.filters` (top-n-sigma, typical-p, XTC, mirostat) and `sampling.rewriters`
(logit bias, DRY).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol

import numpy as np

from sampling.engine import Candidates, vocabulary_weights, weights_of
from sampling.ordering import prefix_reaching, sort_descending, top_ids
from sampling.penalties import penalized_logits
from sampling.settings import SamplerSettings, TopPScope

UnitKind = Literal["logits", "candidates"]

_LARGEST_FLOAT32 = float(np.finfo(np.float32).max)


class SamplerUnit(Protocol):
    """One named step of the chain.

    Attributes:
        name: The unit's name in a chain's order (llama.cpp's `--samplers` name).
        kind: "logits" (rewrites the logits before their order is read) or
            "candidates" (reads the order: filters and the temperature).
    """

    name: ClassVar[str]
    kind: ClassVar[UnitKind]

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> SamplerUnit | None:
        """The unit with its parameters from `settings`; None when they turn it off."""
        ...

    def apply(self, candidates: Candidates) -> None:
        """Change one step's candidates in place."""
        ...


@dataclass(frozen=True, slots=True)
class Penalties:
    """Repeat, frequency and presence penalties over the last-n window.

    Attributes:
        settings: The settings holding the four penalty fields.
    """

    name: ClassVar[str] = "penalties"
    kind: ClassVar[UnitKind] = "logits"
    settings: SamplerSettings

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Penalties | None:
        """Built when some penalty can change a logit."""
        return cls(settings) if settings.penalizes else None

    def apply(self, candidates: Candidates) -> None:
        """Replace the logits by a penalised copy, with their new maximum."""
        # A fresh copy, not a workspace buffer: copying into a buffer that lies 16
        # bytes past the logits modulo 4 KiB (4K aliasing) runs ten times slower.
        penalized = penalized_logits(candidates.logits, self.settings, candidates.history)
        if penalized is not candidates.logits:
            argmax = int(np.argmax(penalized))
            candidates.logits = penalized
            candidates.argmax = argmax
            candidates.maximum = float(penalized[argmax])


@dataclass(frozen=True, slots=True)
class Temperature:
    """Sets the temperature the later units and the final distribution read at.

    The logits are never divided here: each reader scales (logit - max) by the
    temperature it finds, so the filters before this unit read temperature 1. With a
    dynamic range (llama.cpp's `temp_ext`), the temperature is
    min + (max - min) * (H / log n) ** exponent over [t - range, t + range], H the
    entropy of the n kept tokens.

    Attributes:
        temperature: The temperature (> 0: a greedy chain has no such unit).
        dynamic_range: The dynamic range (0: a fixed temperature).
        exponent: The dynamic temperature's exponent.
    """

    name: ClassVar[str] = "temperature"
    kind: ClassVar[UnitKind] = "candidates"
    temperature: float
    dynamic_range: float = 0.0
    exponent: float = 1.0

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Temperature | None:
        """Built unless the temperature means greedy."""
        if settings.greedy:
            return None
        return cls(settings.temperature, settings.dynatemp_range, settings.dynatemp_exponent)

    def apply(self, candidates: Candidates) -> None:
        """Read everything from here on at this (or the dynamic) temperature."""
        if self.dynamic_range <= 0.0:
            candidates.temperature = self.temperature
            return
        logits = candidates.logits
        ids = candidates.ids
        size = logits.shape[0] if ids is None else ids.shape[0]
        if size <= 1:
            return
        low = max(0.0, self.temperature - self.dynamic_range)
        high = self.temperature + self.dynamic_range
        if ids is None:
            weights = vocabulary_weights(
                logits,
                candidates.maximum,
                candidates.temperature,
                candidates.workspace.array("filter-weights", size, np.float64),
            )
        else:
            weights = weights_of(logits, candidates.top, candidates.temperature, ids)
        probs = weights / weights.sum()
        nonzero = probs[probs > 0.0]
        entropy = float(-np.sum(nonzero * np.log(nonzero)))
        dynamic = low + (high - low) * (entropy / math.log(size)) ** self.exponent
        if dynamic <= 0.0:  # llama.cpp keeps the top token alone
            candidates.cut(
                np.array([candidates.argmax], dtype=np.intp) if ids is None else ids[:1],
                self.name,
            )
            return
        candidates.temperature = candidates.temperature * dynamic


@dataclass(frozen=True, slots=True)
class TopK:
    """Keep the k most probable tokens (the same at any temperature).

    Attributes:
        k: How many tokens to keep (> 0).
    """

    name: ClassVar[str] = "top_k"
    kind: ClassVar[UnitKind] = "candidates"
    k: int

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> TopK | None:
        """Built when top_k is on (> 0)."""
        return cls(settings.top_k) if settings.top_k > 0 else None

    def apply(self, candidates: Candidates) -> None:
        """Keep the first k of the order."""
        ids = candidates.ids
        if ids is None:
            if self.k < candidates.logits.shape[0]:
                candidates.cut(top_ids(candidates.logits, self.k), "top_k")
        elif ids.shape[0] > self.k:
            candidates.cut(ids[: self.k], "top_k")


@dataclass(frozen=True, slots=True)
class TopP:
    """Keep the shortest prefix whose mass reaches p (the crossing token kept).

    Attributes:
        p: The mass to reach, in (0, 1).
        scope: "kept" measures the mass within the kept set (llama.cpp, HF);
            "vocab" against the whole vocabulary (candle's TopKThenTopP).
    """

    name: ClassVar[str] = "top_p"
    kind: ClassVar[UnitKind] = "candidates"
    p: float
    scope: TopPScope

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> TopP | None:
        """Built when top_p is on (< 1)."""
        return cls(settings.top_p, settings.top_p_scope) if settings.top_p < 1.0 else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the prefix that reaches p."""
        logits = candidates.logits
        maximum = candidates.top
        temperature = candidates.temperature
        ids = candidates.ids
        top_p = self.p
        if ids is None or self.scope == "vocab":
            all_weights = vocabulary_weights(
                logits,
                maximum,
                temperature,
                candidates.workspace.array("filter-weights", logits.shape[0], np.float64),
            )
            total = float(all_weights.sum())
        if ids is None:
            prefix, ranked = prefix_reaching(
                logits, maximum, temperature, all_weights, top_p * total
            )
            if prefix.shape[0] < logits.shape[0]:
                candidates.cut(prefix, "top_p", ranked, weights=all_weights[prefix])
            return
        weights = candidates.kept_weights()
        if self.scope == "vocab":
            # candle's TopKThenTopP: p against the whole vocabulary's mass.
            if top_p >= float(weights.sum()) / total:
                return
        else:
            total = float(weights.sum())
        cumulative = np.cumsum(weights)
        cumulative /= total
        keep = int(np.searchsorted(cumulative, top_p, side="left")) + 1
        if keep < ids.shape[0]:
            candidates.cut(ids[:keep], "top_p", weights=weights[:keep])


@dataclass(frozen=True, slots=True)
class MinP:
    """Keep tokens with p >= min_p * p_max (a prefix: the order is by probability).

    Attributes:
        min_p: The fraction of the top probability a token needs, in (0, 1).
    """

    name: ClassVar[str] = "min_p"
    kind: ClassVar[UnitKind] = "candidates"
    min_p: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> MinP | None:
        """Built when min_p is on (> 0)."""
        return cls(settings.min_p) if settings.min_p > 0.0 else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the tokens at least min_p as probable as the top one."""
        logits = candidates.logits
        maximum = candidates.maximum
        temperature = candidates.temperature
        ids = candidates.ids
        whole_vocabulary = ids is None
        if ids is None:
            # p_i / p_max = exp((x_i - max) / T) >= min_p  <=>  x_i >= max + T ln(min_p);
            # select a little below that bound, then decide exactly in float64.
            bound = maximum + temperature * math.log(self.min_p)
            lowest = bound - 1e-3 * (1.0 + abs(bound))
            if lowest < -_LARGEST_FLOAT32 and logits.dtype == np.float32:
                lowest = -math.inf  # compared in float32, it would round there anyway
            band = np.flatnonzero(logits >= lowest)
            ids = sort_descending(logits, band)
            ratios = weights_of(logits, maximum, temperature, ids)
        else:
            # Against the kept set's own top (XTC or typical-p may have removed the maximum).
            ratios = candidates.kept_weights()
        keep = int(np.count_nonzero(ratios >= self.min_p))
        if keep >= logits.shape[0] or (keep >= ids.shape[0] and not whole_vocabulary):
            return
        # Over the whole vocabulary the sorted band is a longer prefix of the order.
        candidates.cut(
            ids[:keep], "min_p", ids if whole_vocabulary else None, weights=ratios[:keep]
        )
