"""Mirostat 1 and 2 (llama.cpp's `mirostat` and `mirostat_v2`).

It runs outside the order, as in llama.cpp's common sampler: when on, the chain
after the logit bias is a plain temperature and mirostat alone. Both versions keep
a prefix of the order sized from the state mu, which each draw updates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.engine import Candidates, vocabulary_weights, weights_of
from sampling.ordering import top_ids
from sampling.samplers.unit import UnitKind
from sampling.setting_spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.settings import SamplerSettings

SETTINGS = (
    SettingSpec(
        "mirostat",
        "int",
        default=0,
        off=0,
        group="mirostat",
        label="mirostat",
        help="mirostat 1 or 2 (replaces the chain after temperature); 0 is off",
        minimum=0,
        maximum=2,
        slider=SliderRange(0, 2, hard_min=0, hard_max=2, fine=1, coarse=2),
    ),
    SettingSpec(
        "mirostat_tau",
        "float",
        default=5.0,
        group="mirostat",
        label="miro. tau",
        help="mirostat: the target surprise in bits",
        minimum=0.0,
        slider=SliderRange(0.0, 10.0, hard_min=0.0, hard_max=100.0, fine=0.1, coarse=1.0),
        short_key="tau",
        needs="mirostat",
    ),
    SettingSpec(
        "mirostat_eta",
        "float",
        default=0.1,
        group="mirostat",
        label="miro. eta",
        help="mirostat: the learning rate of mu",
        minimum=0.0,
        slider=SliderRange(0.0, 1.0, hard_min=0.0, hard_max=10.0, fine=0.01, coarse=0.1),
        short_key="eta",
        needs="mirostat",
    ),
)

MIROSTAT_M = 100
"""Tokens mirostat 1 estimates the Zipf exponent from (llama.cpp's common passes 100)."""


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
    in_order: ClassVar[bool] = False
    specs: ClassVar[tuple[SettingSpec, ...]] = SETTINGS
    group_titles: ClassVar[Mapping[str, str]] = {"mirostat": "mirostat"}
    label: ClassVar[str] = "mirostat"
    row_label: ClassVar[str] = "miro"
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
