"""Adaptive-p: draw tokens near a target probability, steered by a moving average.

llama.cpp's `llama_sampler_init_adaptive_p(target, decay, seed)`
(src/llama-sampler.cpp, `llama_sampler_adaptive_p_*`; ggml-org/llama.cpp#17927):

- apply: softmax the candidates it is handed (the kept set, at the temperature
  reached) and remember those original probabilities p_i. The adapted target is
  clamp(2 * target - weighted_sum / total_weight, 0, 1) (target clamped to [0, 1];
  the target itself while total_weight is 0). Every candidate whose logit is not
  -inf gets the logit 5 - 10 * d² / (1 + d), d = |p_i - adapted| / 0.3: quadratic
  near the adapted target, linear in the tails. It then softmaxes those and draws
  one token (so it must run last, like mirostat), remembering the drawn token and
  its original probability.
- accept(token): only when `token` is the one its own apply drew, the moving
  average takes that token's original probability: weighted_sum = p + decay *
  weighted_sum, total_weight = 1 + decay * total_weight. Any other token (forced,
  or re-drawn after a grammar rejection) leaves the average as it was; either way
  the remembered draw is forgotten.
- reset (and init): weighted_sum = target / (1 - decay), total_weight =
  1 / (1 - decay), as if every earlier token had had the target probability.

The decay is clamped to [0, 0.99]; a negative target turns the transform off (the
candidates are drawn from as they are). Every candidate that is not -inf keeps a
nonzero probability: without a truncation before it (llama.cpp suggests min-p), a
whole vocabulary's tail shares a large part of the mass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt

from sampling.engine import Candidates, Kept
from sampling.logits import FloatArray
from sampling.samplers.unit import UnitKind
from sampling.setting_spec import SettingSpec, SliderRange
from sampling.workspace import Workspace

if TYPE_CHECKING:
    from sampling.settings import SamplerSettings

SETTINGS = (
    SettingSpec(
        "adaptive_target",
        "float",
        default=-1.0,
        off=-1.0,
        off_below=0.0,
        group="adaptive",
        label="adaptive-p",
        help="adaptive-p (llama.cpp): draw tokens near this probability; negative is off",
        minimum=-1.0,
        maximum=1.0,
        slider=SliderRange(-1.0, 1.0, hard_min=-1.0, hard_max=1.0, fine=0.01, coarse=0.05),
        short_key="adaptive",
    ),
    SettingSpec(
        "adaptive_decay",
        "float",
        default=0.9,
        group="adaptive",
        label="adapt. decay",
        help="adaptive-p: the moving average's decay (history ~ 1/(1-decay) tokens)",
        minimum=0.0,
        maximum=0.99,
        slider=SliderRange(0.0, 0.99, hard_min=0.0, hard_max=0.99, fine=0.01, coarse=0.05),
        short_key="adaptive_decay",
        needs="adaptive_target",
    ),
)

DISTRIBUTION_WIDTH = 0.3
PEAK_LOGIT = 5.0
SHARPNESS = 10.0
MAX_DECAY = 0.99

Float64Array = npt.NDArray[np.float64]


def adapted_target(target: float, weighted_sum: float, total_weight: float) -> float:
    """The step's target: clamp(2 * target - average, 0, 1), target clamped to [0, 1]."""
    clamped = min(max(target, 0.0), 1.0)
    if total_weight == 0.0:
        return clamped
    return min(max(2.0 * clamped - weighted_sum / total_weight, 0.0), 1.0)


def adaptive_logits(
    probs: Float64Array, target: float, out: Float64Array | None = None
) -> Float64Array:
    """5 - 10 * d² / (1 + d) with d = |p - target| / 0.3, for each probability.

    Args:
        probs: The original probabilities.
        target: The adapted target.
        out: Where to write (a fresh array when None); may be `probs` itself.
    """
    distance = np.subtract(probs, target, out=out)
    np.abs(distance, out=distance)
    distance /= DISTRIBUTION_WIDTH
    denominator = distance + 1.0
    np.multiply(distance, distance, out=distance)
    distance /= denominator
    distance *= -SHARPNESS
    distance += PEAK_LOGIT
    return distance


def adaptive_probs(
    probs: Float64Array, target: float, allowed: npt.NDArray[np.bool_] | None = None
) -> Float64Array:
    """The transformed distribution: softmax of `adaptive_logits` (a reference form).

    Args:
        probs: The original probabilities of the candidates.
        target: The adapted target.
        allowed: Which candidates take part (not -inf); all when None.
    """
    logits = adaptive_logits(probs, target)
    if allowed is not None:
        logits[~allowed] = -math.inf
    weights = np.exp(logits - logits.max())
    result: Float64Array = weights / weights.sum()
    return result


class AdaptiveState:
    """Adaptive-p's state and its three steps (apply, the draw's record, accept).

    Args:
        target: The target probability (negative: off; clamped to [0, 1] when used).
        decay: The moving average's decay (clamped to [0, 0.99]).
    """

    def __init__(self, target: float, decay: float) -> None:
        self.target = target
        self.decay = min(max(decay, 0.0), MAX_DECAY)
        self.weighted_sum = 0.0
        self.total_weight = 0.0
        self.pinned: float | None = None
        """A recorded step's adapted target, which the next apply uses instead of the
        average's (a what-if of that step); used once."""
        self._pending: tuple[int, float] | None = None
        self._original: Kept | None = None
        self.reset()

    @property
    def on(self) -> bool:
        """Whether the transform applies (a negative target turns it off)."""
        return self.target >= 0.0

    @property
    def current_target(self) -> float:
        """The adapted target the next apply uses."""
        if self.pinned is not None:
            return self.pinned
        return adapted_target(self.target, self.weighted_sum, self.total_weight)

    @property
    def pending_token(self) -> int | None:
        """The token the last apply's draw chose, until accepted (or None)."""
        return None if self._pending is None else self._pending[0]

    def retune(self, target: float, decay: float) -> None:
        """New parameters (a live change): the moving average so far is kept."""
        self.target = target
        self.decay = min(max(decay, 0.0), MAX_DECAY)

    def reset(self) -> None:
        """The state of a fresh sampler: as if every earlier token had the target."""
        self.weighted_sum = self.target / (1.0 - self.decay)
        self.total_weight = 1.0 / (1.0 - self.decay)
        self._pending = None
        self._original = None

    def apply(self, kept: Kept, logits: FloatArray, workspace: Workspace) -> Kept:
        """The distribution to draw from: `kept` transformed around the adapted target.

        Args:
            kept: The kept set's distribution (its probabilities are the originals).
            logits: The logits it was computed from (a -inf logit stays out).
            workspace: Scratch buffers (the result of a whole-vocabulary step lives in
                one, valid until the next step).
        """
        self._original = kept
        self._pending = None
        if not self.on:
            return kept
        adapted = self.current_target
        self.pinned = None
        if kept.ids is None:
            size = logits.shape[0]
            shaped = adaptive_logits(
                kept.probs, adapted, workspace.array("adaptive", size, np.float64)
            )
            if kept.n_kept < size:
                shaped[np.isneginf(logits)] = -math.inf
        else:
            shaped = adaptive_logits(kept.probs, adapted)
            banned = np.isneginf(logits[kept.ids])
            if banned.any():
                shaped[banned] = -math.inf
        shaped -= float(shaped.max())
        np.exp(shaped, out=shaped)
        shaped /= float(shaped.sum())
        return replace(kept, probs=shaped, n_kept=int(np.count_nonzero(shaped)))

    def drawn(self, token: int) -> None:
        """Remember the token drawn from the last apply's distribution, and its original p."""
        original = self._original
        self._original = None
        if original is None or not self.on:
            return
        if original.ids is None:
            prob = float(original.probs[token])
        else:
            position = np.flatnonzero(original.ids == token)
            if position.size == 0:
                return
            prob = float(original.probs[int(position[0])])
        self._pending = (token, prob)

    def accept(self, token: int | None) -> None:
        """The token the sequence took: the average moves only if it is the drawn one."""
        pending = self._pending
        self._pending = None
        if pending is None or pending[0] != token:
            return
        self.weighted_sum = pending[1] + self.decay * self.weighted_sum
        self.total_weight = 1.0 + self.decay * self.total_weight


@dataclass(frozen=True, slots=True)
class AdaptiveP:
    """Adaptive-p in the chain: it reshapes the distribution the chain ends with.

    Wherever an order names it, it runs last (it draws the token). Its state lives
    in an `AdaptiveState` the sampler keeps from step to step and hands over as
    `Candidates.adaptive`; without one (a single step), a fresh state is used.

    Attributes:
        target: The target probability, in [0, 1].
        decay: The moving average's decay.
    """

    name: ClassVar[str] = "adaptive_p"
    kind: ClassVar[UnitKind] = "candidates"
    in_order: ClassVar[bool] = True
    specs: ClassVar[tuple[SettingSpec, ...]] = SETTINGS
    group_titles: ClassVar[Mapping[str, str]] = {"adaptive": "adaptive-p"}
    label: ClassVar[str] = "adapt-p"
    row_label: ClassVar[str] = "adapt"
    target: float
    decay: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> AdaptiveP | None:
        """Built when adaptive_target is on (not negative)."""
        if settings.adaptive_target < 0.0:
            return None
        return cls(settings.adaptive_target, settings.adaptive_decay)

    def apply(self, candidates: Candidates) -> None:
        """Ask for the final distribution to be reshaped (the chain does it last)."""
        if candidates.adaptive is None:
            candidates.adaptive = AdaptiveState(self.target, self.decay)
