"""What guidance did at one step: the two distributions, the combination, the change.

The guidance unit (`sampling.samplers.guidance`) and the contrast unit
(`sampling.samplers.contrast`) report each step's figures (`guidance_report`) under
their names in the step's record (`Step.reports`): both distributions' top tokens, the
combination's, which tokens it raised and lowered the most, and how far apart the two
distributions are. A panel reads them through the unit's `describe`, `--json` through
`report_json`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from sampling.logits import FloatArray
from sampling.ordering import top_ids
from sampling.samplers.base import Figure, Report, TokenFigures, TokenText, token_number
from sampling.weights import Float64Array

#: How many tokens each list of a step's report holds.
REPORT_TOKENS = 8

TOP_LISTS = ("cond", "uncond", "guided")
"""The report's lists of top tokens with their probabilities: the conditional
distribution's (the reply's own prompt, the large model), the other one's (the
negative prompt's, the small model's), and the combination's."""

CHANGE_LISTS = ("raised", "lowered")
"""The report's lists of tokens with the change the combination made to their
probability (guided minus conditional): raised the most, lowered the most."""


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


def _top(log_probs: Float64Array, count: int) -> TokenFigures:
    """The `count` most probable tokens with their probabilities, most probable first
    (ties: lower id), those removed (-inf) left out."""
    ids = top_ids(log_probs, min(count, log_probs.shape[0]))
    return tuple((int(i), float(np.exp(log_probs[i]))) for i in ids if log_probs[i] > -np.inf)


def _extremes(change: Float64Array, count: int) -> TokenFigures:
    """The `count` largest positive values of `change`, largest first (ties: lower
    id), with their ids."""
    ids = top_ids(change, min(count, change.shape[0]))
    return tuple((int(i), float(change[i])) for i in ids if change[i] > 0.0)


def guidance_report(
    cond_log: Float64Array,
    uncond_log: Float64Array,
    guided: Float64Array,
    scale: float,
    count: int = REPORT_TOKENS,
) -> Report:
    """What combining the log-probabilities `cond_log` and `uncond_log` into `guided`
    at `scale` does: the scale, KL(cond || uncond) in nats ("divergence"), each
    distribution's top tokens (`TOP_LISTS`) and the tokens raised and lowered the most
    with the change (`CHANGE_LISTS`; a drop is negative)."""
    guided_log = log_softmax(guided)
    cond_probs = np.exp(cond_log)
    change = np.exp(guided_log) - cond_probs
    divergence = float(np.sum(cond_probs * (cond_log - uncond_log)))
    return {
        "scale": scale,
        "divergence": max(0.0, divergence),
        "cond": _top(cond_log, count),
        "uncond": _top(uncond_log, count),
        "guided": _top(guided_log, count),
        "raised": _extremes(change, count),
        "lowered": tuple((token, -drop) for token, drop in _extremes(-change, count)),
    }


def token_figures(report: Report, name: str) -> TokenFigures:
    """The list of tokens `name` of a report (empty when it holds none)."""
    value: Figure = report.get(name)
    return value if isinstance(value, tuple) else ()


def has_two_distributions(report: Report) -> bool:
    """Whether `report` is one of two distributions and their combination (guidance's,
    contrast's): it holds the top lists."""
    return all(name in report for name in TOP_LISTS)


def report_json(
    report: Report, text: Callable[[int], str | None] | None = None
) -> dict[str, object]:
    """A step's report as JSON-ready values: each top list as objects with "id" and
    "prob", each change list with "id" and "change" (with `text`, each token's "text"
    too)."""

    def token(token_id: int) -> dict[str, object]:
        return {"id": token_id} if text is None else {"id": token_id, "text": text(token_id)}

    shown: dict[str, object] = {"scale": report.get("scale")}
    for name in TOP_LISTS:
        shown[name] = [token(t) | {"prob": p} for t, p in token_figures(report, name)]
    for name in CHANGE_LISTS:
        shown[name] = [token(t) | {"change": c} for t, c in token_figures(report, name)]
    shown["divergence"] = report.get("divergence")
    return shown


def report_line(label: str, report: Report, piece: TokenText = token_number) -> str:
    """A step's report on one line for the probability panel: the scale, the
    divergence, and the token raised and the token lowered the most (as `piece` shows
    them)."""
    parts: list[str] = []
    scale, divergence = report.get("scale"), report.get("divergence")
    if isinstance(scale, float | int):
        parts.append(f"×{scale:.3g}")
    if isinstance(divergence, float | int):
        parts.append(f"KL {divergence:.3g} nats")
    for name, sign in (("raised", "↑"), ("lowered", "↓")):
        tokens = token_figures(report, name)
        if tokens:
            token, change = tokens[0]
            parts.append(f"{sign} {piece(token)} {change * 100:+.1f}%")
    return label + " " + " · ".join(parts)


def step_divergence(reports: Mapping[str, Report]) -> float | None:
    """How far apart a step's two distributions were: the largest divergence (KL in
    nats) among its reports that hold two distributions (guidance's, contrast's);
    None when it has none."""
    found = [
        float(value)
        for report in reports.values()
        if has_two_distributions(report)
        and isinstance(value := report.get("divergence"), float | int)
        and not isinstance(value, bool)
    ]
    return max(found) if found else None
