"""Which sampled tokens count as surprising: the ones the token cursor jumps between
and the timeline marks.

A token is surprising when its probability under the model's raw distribution
(temperature 1, before any filter: `Step.prob_unfiltered`) is below a threshold
(``p<0.05``), or when its surprisal −ln p exceeds the distribution's entropy by more
than a margin (``surprise>2``: the token was that many nats less likely than the
model expected a token to be, which finds surprises in a confident distribution
that a fixed probability misses). A step that does not record its raw probability
falls back to the probability it was drawn with.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from sampling.errors import SettingsError
from sampling.records import Step

SurpriseKind = Literal["p", "surprise"]

_FORMS = "p<BOUND (a raw probability) or surprise>MARGIN (nats over the entropy)"
_RULE = re.compile(r"^\s*(p|surprise)\s*(<|>)\s*([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*$")


@dataclass(frozen=True, slots=True)
class SurpriseRule:
    """When a token is surprising.

    Attributes:
        kind: "p": its raw probability is below `threshold`; "surprise": its
            surprisal −ln p exceeds the entropy by more than `threshold` nats.
        threshold: The bound (a probability in (0, 1], or a margin in nats ≥ 0).
    """

    kind: SurpriseKind = "p"
    threshold: float = 0.05

    def __post_init__(self) -> None:
        if self.kind == "p" and not 0.0 < self.threshold <= 1.0:
            raise SettingsError("surprise", self.text, "p<BOUND with BOUND in (0, 1]")
        if self.kind == "surprise" and not 0.0 <= self.threshold < math.inf:
            raise SettingsError("surprise", self.text, "surprise>MARGIN with MARGIN ≥ 0 nats")

    @property
    def text(self) -> str:
        """The rule as it is written: "p<0.05" or "surprise>2"."""
        sign = "<" if self.kind == "p" else ">"
        return f"{self.kind}{sign}{self.threshold:g}"

    def matches(self, step: Step) -> bool:
        """Whether the token `step` sampled is surprising."""
        raw = step.prob_unfiltered
        prob = step.prob if raw is None else raw
        if self.kind == "p":
            return prob < self.threshold
        surprisal = math.inf if prob <= 0.0 else -math.log(prob)
        return surprisal - step.entropy > self.threshold


DEFAULT_SURPRISE = SurpriseRule()

SURPRISE_PRESETS = (
    SurpriseRule("p", 0.01),
    SurpriseRule("p", 0.05),
    SurpriseRule("p", 0.2),
    SurpriseRule("surprise", 1.0),
    SurpriseRule("surprise", 3.0),
)
"""The rules the app's key cycles through."""


def parse_surprise(text: str) -> SurpriseRule:
    """A rule from its text: ``p<0.05`` or ``surprise>2``.

    Raises:
        SettingsError: The text is neither form, or its bound is out of range.
    """
    match = _RULE.match(text.lower())
    kind, sign, number = match.groups() if match else ("", "", "")
    if match is None or (kind == "p") != (sign == "<"):
        raise SettingsError("surprise", text, _FORMS)
    return SurpriseRule("p" if kind == "p" else "surprise", float(number))


def next_rule(rule: SurpriseRule) -> SurpriseRule:
    """The preset after `rule` (the first one when `rule` is not a preset)."""
    if rule in SURPRISE_PRESETS:
        return SURPRISE_PRESETS[(SURPRISE_PRESETS.index(rule) + 1) % len(SURPRISE_PRESETS)]
    return SURPRISE_PRESETS[0]
