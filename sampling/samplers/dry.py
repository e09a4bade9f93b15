"""DRY, "Don't Repeat Yourself" (llama.cpp's `dry`, ported there from KoboldCpp).

It penalises every token that would extend a sequence already seen in the last
`dry_penalty_last_n` tokens by multiplier * base ** (repeat length - allowed
length), a repeat being cut short by a sequence breaker.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.candidates import Candidates
from sampling.samplers.base import SummaryStyle, declared_summary
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import IN_ORDER, Placement
from sampling.settings.spec import SettingSpec, SliderRange
from sampling.vocabulary import BreakerHeads, breaker_heads

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class DryParams:
    """Dry's parameters, one field per setting.

    Attributes:
        dry_multiplier: DRY's penalty scale; 0.0 is off.
        dry_base: DRY's penalty is multiplier * base ** (length - allowed length).
        dry_allowed_length: Repeats up to this long are not penalised.
        dry_penalty_last_n: Tokens DRY scans (-1: the whole history; 0 is off).
        dry_sequence_breakers: Texts that end a repeat (matched on token text).
    """

    dry_multiplier: float = setting(
        SettingSpec(
            "dry_multiplier",
            "float",
            rank=180,
            default=0.0,
            off=0.0,
            group="dry",
            label="dry mult.",
            help="DRY: penalise tokens that extend a repeat; 0 is off",
            minimum=0.0,
            slider=SliderRange(0.0, 2.0, hard_min=0.0, hard_max=100.0, fine=0.01, coarse=0.1),
            short_key="dry",
        )
    )
    dry_base: float = setting(
        SettingSpec(
            "dry_base",
            "float",
            rank=190,
            default=1.75,
            group="dry",
            label="dry base",
            help="DRY: the penalty grows as base ** (repeat length - allowed length)",
            minimum=1.0,
            slider=SliderRange(1.0, 4.0, hard_min=1.0, hard_max=100.0, fine=0.01, coarse=0.25),
            short_key="dry_base",
            needs="dry_multiplier",
        )
    )
    dry_allowed_length: int = setting(
        SettingSpec(
            "dry_allowed_length",
            "int",
            rank=200,
            default=2,
            group="dry",
            label="dry allowed",
            help="DRY: repeats up to this long go unpenalised",
            minimum=0,
            slider=SliderRange(0, 20, hard_min=0, hard_max=10_000, fine=1, coarse=4),
            short_key="dry_len",
            needs="dry_multiplier",
        )
    )
    dry_penalty_last_n: int = setting(
        SettingSpec(
            "dry_penalty_last_n",
            "int",
            rank=210,
            default=64,
            off=0,
            group="dry",
            label="dry last-n",
            help="DRY: tokens scanned for repeats; -1 is the whole context, 0 is off",
            minimum=-1,
            slider=SliderRange(-1, 1024, hard_min=-1, hard_max=1_000_000, fine=1, coarse=64),
            short_key="dry_n",
            needs="dry_multiplier",
        )
    )
    dry_sequence_breakers: tuple[str, ...] = setting(
        SettingSpec(
            "dry_sequence_breakers",
            "texts",
            rank=220,
            default=("\n", ":", '"', "*"),
            group="dry",
            label="dry breaks",
            help='DRY: texts that end a repeat (JSON list or comma-separated, "none")',
            short_key="dry_breakers",
            needs="dry_multiplier",
        )
    )


_FLOAT_MAX_LOG = 88.7228391


@dataclass(frozen=True, slots=True)
class Dry(Stateless):
    """DRY: penalise tokens that would extend a repeat of the recent history.

    Attributes:
        multiplier: The penalty's scale (> 0).
        base: The penalty's growth per token of repeat (>= 1).
        allowed_length: Repeats up to this long are not penalised.
        last_n: How many recent tokens are scanned (-1: the whole history).
        breakers: The sequence breakers, as text.
    """

    name: ClassVar[str] = "dry"
    kind: ClassVar[UnitKind] = "logits"
    placement: ClassVar[Placement] = IN_ORDER
    params: ClassVar[type[DryParams]] = DryParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(DryParams)
    group_titles: ClassVar[Mapping[str, str]] = {"dry": "DRY: repeated sequences"}
    label: ClassVar[str] = "dry"
    row_label: ClassVar[str] = "dry"
    multiplier: float
    base: float
    allowed_length: int
    last_n: int
    breakers: tuple[str, ...]

    @classmethod
    def summary(
        cls, settings: SamplerSettings, style: SummaryStyle = "active"
    ) -> Mapping[str, str]:
        """DRY's settings; its sequence breakers only when changed."""
        parts = declared_summary(cls.specs, settings, style)
        breakers = next(spec for spec in cls.specs if spec.name == "dry_sequence_breakers")
        if settings.of(DryParams).dry_sequence_breakers == breakers.default:
            parts.pop(breakers.name, None)
        return parts

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """On when settings.dry_multiplier != 0.0 and settings.dry_penalty_last_n != 0."""
        params = settings.of(DryParams)
        return params.dry_multiplier != 0.0 and params.dry_penalty_last_n != 0

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Dry | None:
        """Built when DRY is on (multiplier > 0, last-n not 0)."""
        params = settings.of(DryParams)
        if not cls.is_on(settings):
            return None
        return cls(
            params.dry_multiplier,
            params.dry_base,
            params.dry_allowed_length,
            params.dry_penalty_last_n,
            params.dry_sequence_breakers,
        )

    def apply(self, candidates: Candidates) -> None:
        """Subtract each extending token's penalty from a copy of the logits."""
        history = candidates.history
        window = history if self.last_n < 0 else history[len(history) - self.last_n :]
        tokens = [int(token) for token in window]
        vocabulary = candidates.vocabulary
        heads: BreakerHeads = {}
        if vocabulary is not None and self.breakers:
            heads = breaker_heads(vocabulary, self.breakers)
        penalties = dry_penalties(tokens, heads, self.allowed_length)
        if not penalties:
            return
        max_exponent = int(_FLOAT_MAX_LOG / math.log(self.base)) if self.base > 1.000001 else 0
        logits = candidates.logits
        rewritten = logits.copy()
        for token, length in penalties.items():
            if token >= logits.shape[0]:
                continue
            exponent = length - self.allowed_length
            if max_exponent > 0 and exponent > max_exponent:
                exponent = max_exponent
            penalty = np.float32(self.multiplier * self.base**exponent)
            rewritten[token] -= penalty
        candidates.replace_logits(rewritten)


def dry_penalties(tokens: list[int], heads: BreakerHeads, allowed_length: int) -> dict[int, int]:
    """Each token that would extend a repeat, with the longest such repeat's length.

    A port of llama.cpp's `llama_sampler_dry_apply` steps 1 to 3: the repeat is cut
    at the most recent sequence breaker, suffix matches are found with the
    Z-algorithm run backwards, and a token that is itself a whole breaker is never
    penalised.

    Args:
        tokens: The scanned window of the history, oldest first.
        heads: The breakers' head tokens and tails (see `sampling.vocabulary`).
        allowed_length: Repeats up to this long are not penalised.
    """
    count = len(tokens)
    if count <= allowed_length:
        return {}

    def rat(i: int) -> int:  # the i-th token from the end
        return tokens[count - 1 - i]

    rep_limit = count
    for i in range(count):
        tails = heads.get(rat(i))
        if tails is None:
            continue
        longest = -1
        for tail in tails:
            length = len(tail)
            if longest < length <= i and all(
                tail[offset] == rat(i - offset - 1) for offset in range(length)
            ):
                longest = length
        if longest >= 0:
            rep_limit = i - longest
            break
    if rep_limit < allowed_length:
        return {}

    repeat = [0] * count
    last = count - 1
    right = left = 0
    for k in range(1, count):
        if k > right:
            n = 0
            while n + k < count and rat(n) == rat(n + k):
                n += 1
            repeat[last - k] = min(n, rep_limit)
            if n > 0:
                left, right = k, k + n - 1
        else:
            pair = k - left
            right_part = right - k + 1
            if repeat[last - pair] < right_part:
                repeat[last - k] = min(repeat[last - pair], rep_limit)
            else:
                i = right + 1
                while i < count and rat(i) == rat(i - k):
                    i += 1
                repeat[last - k] = min(i - k, rep_limit)
                left, right = k, i - 1

    longest_by_token: dict[int, int] = {}
    for i in range(count - 1):
        length = repeat[i]
        if length >= allowed_length:
            token = rat(count - 2 - i)
            if longest_by_token.get(token, -1) < length:
                longest_by_token[token] = length
    return {
        token: length
        for token, length in longest_by_token.items()
        if () not in heads.get(token, ())
    }
