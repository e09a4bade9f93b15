"""Logit bias (llama.cpp's `logit_bias`): add a bias to some tokens' logits; -inf bans.

It runs outside the order, always first, as in llama.cpp's common sampler.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.candidates import Candidates
from sampling.errors import LogitsError
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import FIRST, Placement
from sampling.settings.spec import SettingSpec

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class LogitBiasParams:
    """LogitBias's parameters, one field per setting.

    Attributes:
        logit_bias: (token id, bias) pairs in id order, added to the logits before
            anything else; -inf bans the token. Also given as a {id: bias} dict, pairs
            in any order, or text "42=+2;17=-inf" (held as the pairs in id order; a
            token given twice is an error).
    """

    logit_bias: tuple[tuple[int, float], ...] = setting(
        SettingSpec(
            "logit_bias",
            "bias",
            rank=370,
            default=(),
            off=(),
            group="bias",
            label="logit bias",
            help='add to token logits: "42=+2;17=-inf" (-inf bans; --logit-bias also takes text)',
            short_key="bias",
        )
    )


@dataclass(frozen=True, slots=True)
class LogitBias(Stateless):
    """Add a bias to some tokens' logits; -inf bans a token.

    Attributes:
        token_ids: The biased tokens.
        biases: Their biases (same order).
    """

    name: ClassVar[str] = "logit_bias"
    kind: ClassVar[UnitKind] = "logits"
    placement: ClassVar[Placement] = FIRST
    params: ClassVar[type[LogitBiasParams]] = LogitBiasParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(LogitBiasParams)
    group_titles: ClassVar[Mapping[str, str]] = {"bias": "logit bias"}
    label: ClassVar[str] = "ban"
    row_label: ClassVar[str] = "ban"
    token_ids: tuple[int, ...]
    biases: tuple[float, ...]

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> LogitBias | None:
        """Built when some token has a bias."""
        if not cls.is_on(settings):
            return None
        ids, biases = zip(*settings.of(LogitBiasParams).logit_bias, strict=True)
        return cls(tuple(ids), tuple(biases))

    def apply(self, candidates: Candidates) -> None:
        """Replace the logits by a biased copy.

        Raises:
            LogitsError: A token id lies outside the vocabulary, or every token is banned.
        """
        logits = candidates.logits
        if self.token_ids[-1] >= logits.shape[0]:
            raise LogitsError(
                f"logit bias names token id {self.token_ids[-1]}, outside the vocabulary"
                f" of {logits.shape[0]} tokens"
            )
        biased = logits.copy()
        ids = np.asarray(self.token_ids, dtype=np.intp)
        biased[ids] += np.asarray(self.biases, dtype=logits.dtype)
        candidates.replace_logits(biased)
        if any(bias == -math.inf for bias in self.biases):
            candidates.cut_by = self.name
