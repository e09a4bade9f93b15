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
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt

from sampling.candidates import Candidates
from sampling.kept import Kept
from sampling.samplers.base import Report, UnitBase
from sampling.samplers.unit import UnitKind, UnitState
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import LAST, Placement
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.samplers.unit import StepContext
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class AdaptivePParams:
    """AdaptiveP's parameters, one field per setting.

    Attributes:
        adaptive_target: Adaptive-p's target probability (llama.cpp); negative is off.
        adaptive_decay: Adaptive-p's moving-average decay, 0 to 0.99.
    """

    adaptive_target: float = setting(
        SettingSpec(
            "adaptive_target",
            "float",
            rank=340,
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
        )
    )
    adaptive_decay: float = setting(
        SettingSpec(
            "adaptive_decay",
            "float",
            rank=350,
            default=0.9,
            group="adaptive",
            label="adapt. decay",
            help="adaptive-p: the moving average's decay (history ~ 1/(1-decay) tokens)",
            minimum=0.0,
            maximum=0.99,
            slider=SliderRange(0.0, 0.99, hard_min=0.0, hard_max=0.99, fine=0.01, coarse=0.05),
            short_key="adaptive_decay",
            needs="adaptive_target",
        )
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
    probs: Float64Array,
    target: float,
    out: Float64Array | None = None,
    scratch: Float64Array | None = None,
) -> Float64Array:
    """5 - 10 * d² / (1 + d) with d = |p - target| / 0.3, for each probability.

    Args:
        probs: The original probabilities.
        target: The adapted target.
        out: Where to write (a fresh array when None); may be `probs` itself.
        scratch: An array of the same length to work in (a fresh one when None).
    """
    distance = np.subtract(probs, target, out=out)
    np.abs(distance, out=distance)
    distance /= DISTRIBUTION_WIDTH
    denominator = np.add(distance, 1.0, out=scratch)
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


@dataclass(frozen=True, slots=True)
class AdaptiveSnapshot:
    """Adaptive-p's state between steps (what `AdaptiveP.state` gives).

    Attributes:
        weighted_sum: sum(p_i * decay^i) over the tokens taken.
        total_weight: sum(decay^i).
        pending: The token the last draw chose and its original probability, until
            the sequence takes a token (or None).
        pinned: A recorded step's adapted target the next step uses, or None.
    """

    weighted_sum: float
    total_weight: float
    pending: tuple[int, float] | None = None
    pinned: float | None = None


@dataclass(slots=True)
class AdaptiveP(UnitBase):
    """Adaptive-p: reshape the distribution the chain ends with, steered by its average.

    Wherever an order names it, it runs last: the chain hands it the final
    distribution (`reshape`) and the sampler draws from what it returns. The draw's
    token is remembered (`accept`, llama.cpp's apply recording its selection); the
    moving average takes it only once the sequence does, which the next step's
    history shows (`apply`), or `take` says.

    Attributes:
        target: The target probability, in [0, 1].
        decay: The moving average's decay, in [0, 0.99].
    """

    name: ClassVar[str] = "adaptive_p"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = LAST
    params: ClassVar[type[AdaptivePParams]] = AdaptivePParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(AdaptivePParams)
    group_titles: ClassVar[Mapping[str, str]] = {"adaptive": "adaptive-p"}
    label: ClassVar[str] = "adapt-p"
    row_label: ClassVar[str] = "adapt"
    draws: ClassVar[bool] = False
    keeps_state: ClassVar[bool] = True
    target: float
    decay: float
    weighted_sum: float = field(default=0.0, compare=False)
    total_weight: float = field(default=0.0, compare=False)
    pending: tuple[int, float] | None = field(default=None, compare=False)
    pinned: float | None = field(default=None, compare=False)
    """A recorded step's adapted target, which the next step uses instead of the
    average's (a what-if of that step); used once."""
    last_target: float | None = field(default=None, compare=False)
    """The adapted target the last `reshape` used (for the step's record)."""
    _original: Kept | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        self.decay = min(max(self.decay, 0.0), MAX_DECAY)
        self.reset()

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> AdaptiveP | None:
        """Built when adaptive_target is on (not negative)."""
        params = settings.of(AdaptivePParams)
        if not cls.is_on(settings):
            return None
        return cls(params.adaptive_target, params.adaptive_decay)

    @property
    def current_target(self) -> float:
        """The adapted target the next step uses."""
        if self.pinned is not None:
            return self.pinned
        return adapted_target(self.target, self.weighted_sum, self.total_weight)

    @property
    def pending_token(self) -> int | None:
        """The token the last draw chose, until the sequence takes one (or None)."""
        return None if self.pending is None else self.pending[0]

    def begin(self, step: StepContext) -> None:
        """Take the target a recorded step reported, to use once, when the step redoes
        it (nothing to draw: the sampler draws the token)."""
        target = step.recorded.get(self.name, {}).get("target")
        if isinstance(target, int | float) and not isinstance(target, bool):
            self.pinned = float(target)

    def report(self) -> Report | None:
        """The adapted target this step reshaped around (None: it did not reshape)."""
        return None if self.last_target is None else {"target": self.last_target}

    @classmethod
    def describe(cls, report: Report, settings: SamplerSettings) -> str:
        """ "adaptive-p target 0.42": the target this step reshaped around."""
        del settings
        target = report.get("target")
        shown = f"{target:.3f}" if isinstance(target, float | int) else "?"
        return f"adaptive-p target {shown}"

    def apply(self, candidates: Candidates) -> None:
        """Settle the last draw against the token the history took (see `take`)."""
        self.last_target = None
        if self.pending is not None:
            history = candidates.history
            self.take(int(history[-1]) if len(history) else None)

    def reshape(self, kept: Kept, candidates: Candidates) -> Kept:
        """The distribution to draw from: `kept` transformed around the adapted target
        (which the step's record shows: `report`).

        Args:
            kept: The kept set's distribution (its probabilities are the originals).
            candidates: The step it ends: the logits `kept` was computed from (a -inf
                logit stays out) and the scratch buffers (the result of a
                whole-vocabulary step lives in one, valid until the next step).
        """
        logits, workspace = candidates.logits, candidates.workspace
        self._original = kept
        self.pending = None
        adapted = self.last_target = self.current_target
        self.pinned = None
        if kept.ids is None:
            size = logits.shape[0]
            shaped = adaptive_logits(
                kept.probs,
                adapted,
                workspace.array("adaptive", size, np.float64),
                workspace.array("adaptive-scratch", size, np.float64),
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

    def accept(self, token: int, prob: float) -> None:
        """Remember the token drawn from the last reshape, and its original probability."""
        del prob  # its probability after the reshape: the average wants the original
        original = self._original
        self._original = None
        if original is None:
            return
        if original.ids is None:
            self.pending = (token, float(original.probs[token]))
            return
        position = np.flatnonzero(original.ids == token)
        if position.size:
            self.pending = (token, float(original.probs[int(position[0])]))

    def take(self, token: int | None) -> None:
        """The token the sequence took (llama.cpp's accept): the average moves only
        if it is the one the last draw chose; the draw is forgotten either way."""
        pending = self.pending
        self.pending = None
        if pending is None or pending[0] != token:
            return
        self.weighted_sum = pending[1] + self.decay * self.weighted_sum
        self.total_weight = 1.0 + self.decay * self.total_weight

    def reset(self) -> None:
        """As llama.cpp starts: as if every earlier token had had the target."""
        self.weighted_sum = self.target / (1.0 - self.decay)
        self.total_weight = 1.0 / (1.0 - self.decay)
        self.pending = None
        self.pinned = None
        self._original = None

    @property
    def state(self) -> AdaptiveSnapshot:
        """The moving average, the pending draw and a pinned target."""
        return AdaptiveSnapshot(self.weighted_sum, self.total_weight, self.pending, self.pinned)

    def restore(self, state: UnitState) -> None:
        """Take the average of an earlier adaptive-p (a live change of target or decay
        keeps it); start afresh from anything else."""
        if isinstance(state, AdaptiveSnapshot):
            self.weighted_sum = state.weighted_sum
            self.total_weight = state.total_weight
            self.pending = state.pending
            self.pinned = state.pinned
        else:
            self.reset()
