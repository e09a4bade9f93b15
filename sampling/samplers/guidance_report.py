"""What guidance did at one step: the two distributions, the combination, the change.

The guidance unit (`sampling.samplers.guidance`) hands one `GuidanceReport` a step to
the step's record: a panel, `--json` and a notebook read both distributions' top
tokens, the combination's, and which tokens it raised and lowered the most.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sampling.logits import FloatArray
from sampling.weights import Float64Array

#: How many tokens each list of a step's report holds.
REPORT_TOKENS = 8


@dataclass(frozen=True, slots=True)
class TopTokens:
    """A distribution's most probable tokens.

    Attributes:
        token_ids: The tokens, most probable first.
        probs: Their probabilities.
    """

    token_ids: tuple[int, ...]
    probs: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class GuidanceReport:
    """What guidance did at one step (the figures a panel and `--json` show).

    Attributes:
        scale: The scale it combined with.
        cond: The conditional distribution's top tokens (the reply's own prompt).
        uncond: The unconditional one's (the negative prompt's).
        guided: The combination's.
        raised: The tokens whose probability the combination raised the most, with
            the change (guided minus conditional), largest first.
        lowered: Those it lowered the most, with the change (negative), largest drop first.
        divergence: KL(cond || uncond) in nats: how far apart the two distributions are.
    """

    scale: float
    cond: TopTokens
    uncond: TopTokens
    guided: TopTokens
    raised: tuple[tuple[int, float], ...]
    lowered: tuple[tuple[int, float], ...]
    divergence: float

    def to_json(self) -> dict[str, object]:
        """The report as JSON-ready values."""

        def tops(top: TopTokens) -> list[dict[str, object]]:
            return [
                {"id": token, "prob": prob}
                for token, prob in zip(top.token_ids, top.probs, strict=True)
            ]

        return {
            "scale": self.scale,
            "cond": tops(self.cond),
            "uncond": tops(self.uncond),
            "guided": tops(self.guided),
            "raised": [{"id": token, "change": change} for token, change in self.raised],
            "lowered": [{"id": token, "change": change} for token, change in self.lowered],
            "divergence": self.divergence,
        }


def log_softmax(logits: FloatArray) -> Float64Array:
    """Log-probabilities of `logits`, in float64."""
    values = np.asarray(logits, dtype=np.float64)
    shifted = values - float(np.max(values))
    result: Float64Array = shifted - float(np.log(np.sum(np.exp(shifted))))
    return result


def guided_logits(cond: FloatArray, uncond: FloatArray, scale: float) -> Float64Array:
    """`scale * (log_softmax(cond) - log_softmax(uncond)) + log_softmax(uncond)`."""
    cond_log = log_softmax(cond)
    uncond_log = log_softmax(uncond)
    result: Float64Array = scale * (cond_log - uncond_log) + uncond_log
    return result


def _top(log_probs: Float64Array, count: int) -> TopTokens:
    """The `count` most probable tokens, most probable first (ties: lower id), those
    removed (-inf) left out."""
    count = min(count, log_probs.shape[0])
    ids = np.argpartition(-log_probs, count - 1)[:count]
    ids = ids[np.lexsort((ids, -log_probs[ids]))]
    ids = ids[log_probs[ids] > -np.inf]
    return TopTokens(tuple(int(i) for i in ids), tuple(float(p) for p in np.exp(log_probs[ids])))


def _extremes(change: Float64Array, count: int) -> tuple[tuple[int, float], ...]:
    """The `count` largest positive values of `change`, largest first, with their ids."""
    count = min(count, change.shape[0])
    ids = np.argpartition(-change, count - 1)[:count]
    ids = ids[np.lexsort((ids, -change[ids]))]
    return tuple((int(i), float(change[i])) for i in ids if change[i] > 0.0)


def guidance_report(
    cond_log: Float64Array,
    uncond_log: Float64Array,
    guided: Float64Array,
    scale: float,
    count: int = REPORT_TOKENS,
) -> GuidanceReport:
    """What combining the log-probabilities `cond_log` and `uncond_log` into `guided`
    at `scale` does (see `GuidanceReport`)."""
    guided_log = log_softmax(guided)
    cond_probs = np.exp(cond_log)
    change = np.exp(guided_log) - cond_probs
    divergence = float(np.sum(cond_probs * (cond_log - uncond_log)))
    return GuidanceReport(
        scale=scale,
        cond=_top(cond_log, count),
        uncond=_top(uncond_log, count),
        guided=_top(guided_log, count),
        raised=_extremes(change, count),
        lowered=tuple((token, -drop) for token, drop in _extremes(-change, count)),
        divergence=max(0.0, divergence),
    )
