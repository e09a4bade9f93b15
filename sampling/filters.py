"""The filters beyond the classic ones: top-n-sigma, typical-p, XTC and mirostat.

Each has the semantics of llama.cpp's sampler of that name (src/llama-sampling.cpp).
Top-n-sigma and mirostat keep a prefix of the order; typical-p (the tokens whose
surprise is nearest the entropy) and XTC (which removes the most probable tokens
but the last of them above its threshold) keep some other subset, which the
record draws as such.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt

from sampling.engine import Candidates, scaled_gaps, vocabulary_weights, weights_of
from sampling.ordering import IdArray, sort_descending, stable_argsort, top_ids
from sampling.settings import SamplerSettings

UnitKind = Literal["logits", "candidates"]

MIROSTAT_M = 100
"""Tokens mirostat 1 estimates the Zipf exponent from (llama.cpp's common passes 100)."""


def ordered_ids(candidates: Candidates) -> IdArray:
    """The kept set in order, the whole vocabulary sorted when nothing was cut yet."""
    if candidates.ids is not None:
        return candidates.ids
    size = candidates.logits.shape[0]
    ranked = candidates.ranked
    if ranked is not None and ranked.shape[0] == size:
        return ranked
    return sort_descending(candidates.logits, np.arange(size))


@dataclass(frozen=True, slots=True)
class TopNSigma:
    """Keep logits at least max - n * std (std over the kept, finite logits).

    Attributes:
        n: How many standard deviations below the top (> 0).
    """

    name: ClassVar[str] = "top_n_sigma"
    kind: ClassVar[UnitKind] = "candidates"
    n: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> TopNSigma | None:
        """Built when top_n_sigma is on (> 0)."""
        return cls(settings.top_n_sigma) if settings.top_n_sigma > 0.0 else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the logits within n standard deviations of the top."""
        logits = candidates.logits
        ids = candidates.ids
        values = logits if ids is None else logits[ids]
        if values.shape[0] <= 1:
            return
        finite = values[np.isfinite(values)].astype(np.float64)
        bound = float(finite.max()) - self.n * float(finite.std())
        if ids is not None:
            keep = int(np.count_nonzero(values >= bound))  # a prefix: ids are in order
            if keep < ids.shape[0]:
                candidates.cut(ids[:keep], self.name)
            return
        band = np.flatnonzero(logits >= bound)
        if band.shape[0] < logits.shape[0]:
            candidates.cut(sort_descending(logits, band), self.name)


@dataclass(frozen=True, slots=True)
class Typical:
    """Locally typical sampling: keep the tokens whose surprise is nearest the entropy.

    Attributes:
        p: The mass to keep, in [0, 1).
    """

    name: ClassVar[str] = "typ_p"
    kind: ClassVar[UnitKind] = "candidates"
    p: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Typical | None:
        """Built when typical_p is on (< 1)."""
        return cls(settings.typical_p) if settings.typical_p < 1.0 else None

    def apply(self, candidates: Candidates) -> None:
        """Keep the most typical tokens until their mass exceeds p."""
        if candidates.ids is None:
            logits = candidates.logits
            if logits.shape[0] < 2:
                return
            workspace = candidates.workspace
            gaps = workspace.array("typical-gaps", logits.shape[0], np.float64)
            scaled_gaps(logits, candidates.maximum, candidates.temperature, None, gaps)
            probs, scores = _typicality(
                gaps, workspace.array("typical-probs", logits.shape[0], np.float64)
            )
            best = int(np.argmin(scores))
            if probs[best] > self.p and int(np.count_nonzero(scores == scores[best])) == 1:
                # A peaked step: the most typical token alone exceeds p; no sort needed.
                # (Tied scores are ordered by logit, which this shortcut does not read.)
                candidates.cut(np.array([best], dtype=np.intp), self.name, prefix=False)
                return
            ids = ordered_ids(candidates)
            probs, scores = probs[ids], scores[ids]
        else:
            ids = candidates.ids
            gaps = scaled_gaps(candidates.logits, candidates.top, candidates.temperature, ids)
            probs, scores = _typicality(gaps, np.empty(ids.shape[0]))
        by_typicality = stable_argsort(scores)
        cumulative = np.cumsum(probs[by_typicality])
        keep = int(np.searchsorted(cumulative, self.p, side="right")) + 1
        if keep >= ids.shape[0]:
            if candidates.ids is None and ids is not candidates.ranked:
                candidates.ranked = ids
            return
        kept = ids[np.sort(by_typicality[:keep])]
        candidates.cut(kept, self.name, ids if candidates.ids is None else None, prefix=False)


def _typicality(
    gaps: npt.NDArray[np.float64], probs: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The probabilities and typicality scores |surprise - entropy| of some tokens.

    `gaps` are (logit - top) / T; they are overwritten by the scores, and `probs`
    (of the same length) receives the probabilities: large temporaries cost page
    faults. A token's surprise -log p is log Z - gap, with no logarithm per token;
    one of probability 0 (or a -inf logit) scores above every other.
    """
    np.exp(gaps, out=probs)
    total = float(probs.sum())
    probs /= total
    surprise = np.subtract(math.log(total), gaps, out=gaps)
    with np.errstate(invalid="ignore"):  # 0 * inf for a -inf logit: NaN, redone below
        entropy = float(np.dot(probs, surprise))
    if entropy != entropy:
        entropy = float(np.dot(probs, np.where(probs > 0.0, surprise, 0.0)))
    surprise -= entropy
    return probs, np.abs(surprise, out=surprise)


@dataclass(frozen=True, slots=True)
class Xtc:
    """Exclude Top Choices: remove every token at least `threshold` probable but the last.

    It applies on a step with chance `probability` (the step's `xtc_roll`).

    Attributes:
        probability: The chance per step, in (0, 1].
        threshold: The probability a top choice has, at most 0.5.
    """

    name: ClassVar[str] = "xtc"
    kind: ClassVar[UnitKind] = "candidates"
    probability: float
    threshold: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Xtc | None:
        """Built when XTC is on (probability > 0, threshold <= 0.5)."""
        if settings.xtc_probability <= 0.0 or settings.xtc_threshold > 0.5:
            return None
        return cls(settings.xtc_probability, settings.xtc_threshold)

    def apply(self, candidates: Candidates) -> None:
        """Remove the head of the order: the top choices but the least probable of them."""
        if candidates.xtc_roll > self.probability:
            return
        logits = candidates.logits
        ids = candidates.ids
        if ids is None:
            if logits.shape[0] < 2:
                return
            weights = vocabulary_weights(
                logits,
                candidates.maximum,
                candidates.temperature,
                candidates.workspace.array("filter-weights", logits.shape[0], np.float64),
            )
            top = int(np.count_nonzero(weights >= self.threshold * float(weights.sum())))
        else:
            if ids.shape[0] < 2:
                return
            weights = weights_of(logits, candidates.top, candidates.temperature, ids)
            top = int(np.count_nonzero(weights >= self.threshold * float(weights.sum())))
        if top < 2:
            return  # one top choice or none: XTC leaves the kept set alone
        ordered = ordered_ids(candidates)
        ranked = ordered if ids is None else None
        candidates.cut(ordered[top - 1 :], self.name, ranked, prefix=False)


@dataclass(frozen=True, slots=True)
class Mirostat:
    """Mirostat 1 or 2: a kept set sized from the state mu, which each draw updates.

    Version 1 keeps the top k, k from mu and the Zipf exponent estimated on the top
    100 probabilities; version 2 keeps the tokens whose surprise (-log2 p) is at
    most mu. The sampler updates mu after each draw: mu -= eta * (surprise - tau).

    Attributes:
        version: 1 or 2.
    """

    name: ClassVar[str] = "mirostat"
    kind: ClassVar[UnitKind] = "candidates"
    version: int

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Mirostat | None:
        """Built when mirostat is 1 or 2."""
        return cls(settings.mirostat) if settings.mirostat else None

    def apply(self, candidates: Candidates) -> None:
        """Cut the kept set to the size mu asks for."""
        mu = candidates.mirostat_mu
        assert mu is not None, "the sampler sets mu before the chain runs"
        logits = candidates.logits
        ids = candidates.ids
        if ids is None:
            weights = vocabulary_weights(
                logits,
                candidates.maximum,
                candidates.temperature,
                candidates.workspace.array("filter-weights", logits.shape[0], np.float64),
            )
            total = float(weights.sum())
        else:
            weights = weights_of(logits, candidates.top, candidates.temperature, ids)
            total = float(weights.sum())
        size = logits.shape[0] if ids is None else ids.shape[0]
        if self.version == 1:
            head = top_ids(logits, min(MIROSTAT_M, size)) if ids is None else ids[:MIROSTAT_M]
            head_probs = (weights[head] if ids is None else weights[: head.shape[0]]) / total
            keep = _mirostat_k(head_probs, mu, logits.shape[0])
        else:
            with np.errstate(divide="ignore"):
                surprise = -np.log2(weights / total)
            if ids is None:
                keep = int(np.count_nonzero(surprise <= mu))
            else:
                above = np.flatnonzero(surprise > mu)
                keep = int(above[0]) if above.size else size
            keep = max(keep, 1)
        if keep >= size:
            return
        candidates.cut(top_ids(logits, keep) if ids is None else ids[:keep], self.name)


def _mirostat_k(probs: np.ndarray, mu: float, n_vocab: int) -> int:
    """Mirostat 1's k from the top probabilities (llama.cpp's s_hat and k)."""
    count = min(MIROSTAT_M - 1, probs.shape[0] - 1)
    if count <= 0:
        return 1
    i = np.arange(count, dtype=np.float64)
    t = np.log((i + 2.0) / (i + 1.0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        b = np.log(probs[:count] / probs[1 : count + 1])
        s_hat = np.float64(np.sum(t * b) / np.sum(t * t))
        epsilon = s_hat - 1.0
        ratio = (epsilon * np.float64(2.0) ** mu) / (1.0 - np.float64(n_vocab) ** -epsilon)
        k = float(ratio ** (1.0 / s_hat))
    if not math.isfinite(k):
        return n_vocab
    return max(int(k), 1)
