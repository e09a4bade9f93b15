"""Smoothing factor and curve: quadratic sampling (text-generation-webui, KoboldCpp).

text-generation-webui's `QuadraticSamplingLogitsWarper` (modules/sampler_hijack.py):
with h the highest score and d = score - h (<= 0), every score but -inf becomes
`-(k * smoothing_factor * d**2) + (s * smoothing_factor * d**3) + h`,
k = (3 - smoothing_curve) / 2, s = (smoothing_curve - 1) / 2. KoboldCpp applies the
same transform inside its temperature step (`sample_temperature`), right after the
division by the temperature, and text-generation-webui orders it right after the
temperature too: the scores it reads are the logits at the temperature reached so
far, d = (x - top) / T. Curve 1 is the plain quadratic -f d²; a larger factor
sharpens the distribution, a small one (below 1) flattens its head.

samplescope takes curves from 1 to 3, where the transform keeps the order of the
tokens (k and s both >= 0: strictly increasing in d). Outside that range the cubic
term lifts tokens the wrong way: below 1 the far tail climbs back above the head,
above 3 the tokens just under the top climb above it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt

from sampling.candidates import Candidates
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import Placement, right_after
from sampling.settings.spec import SettingSpec, SliderRange
from sampling.weights import scaled_gaps

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class SmoothingParams:
    """Smoothing's parameters, one field per setting.

    Attributes:
        smoothing_factor: Quadratic sampling's factor (text-generation-webui); 0.0 is
            off.
        smoothing_curve: Quadratic sampling's curve, from 1 (plain quadratic) to 3.
    """

    smoothing_factor: float = setting(
        SettingSpec(
            "smoothing_factor",
            "float",
            rank=320,
            default=0.0,
            off=0.0,
            group="smoothing",
            label="smoothing",
            help="quadratic sampling's factor, after the temperature; 0 is off",
            minimum=0.0,
            slider=SliderRange(0.0, 2.0, hard_min=0.0, hard_max=100.0, fine=0.01, coarse=0.1),
            short_key="smooth",
        )
    )
    smoothing_curve: float = setting(
        SettingSpec(
            "smoothing_curve",
            "float",
            rank=330,
            default=1.0,
            group="smoothing",
            label="smooth curve",
            help="quadratic sampling's curve: 1 is the plain quadratic, up to 3",
            minimum=1.0,
            maximum=3.0,
            slider=SliderRange(1.0, 3.0, hard_min=1.0, hard_max=3.0, fine=0.01, coarse=0.25),
            short_key="smooth_curve",
            needs="smoothing_factor",
        )
    )


SMOOTHING_CURVE_RANGE = (1.0, 3.0)
"""The curves whose transform keeps the order of the tokens."""


def smoothed_gaps(
    gaps: npt.NDArray[np.float64],
    factor: float,
    curve: float,
    scratch: npt.NDArray[np.float64] | None = None,
) -> npt.NDArray[np.float64]:
    """The transform of gaps d = (x - top) / T (<= 0), in place: -k f d² + s f d³.

    A gap of -inf (a banned token) stays -inf: a term whose coefficient is 0 is left
    out rather than multiplied (0 * inf would be NaN).

    Args:
        gaps: The gaps below the top, float64; overwritten by the result.
        factor: The smoothing factor f (> 0).
        curve: The smoothing curve, in [1, 3].
        scratch: An array of the same length to work in (a fresh one when None).
    """
    k = (3.0 - curve) / 2.0
    s = (curve - 1.0) / 2.0
    with np.errstate(over="ignore"):
        squared = np.multiply(gaps, gaps, out=scratch)
        if s == 0.0:
            np.multiply(squared, -k * factor, out=gaps)
            return gaps
        np.multiply(gaps, squared, out=gaps)
        gaps *= s * factor
        if k != 0.0:
            squared *= -k * factor
            gaps += squared
    return gaps


@dataclass(frozen=True, slots=True)
class Smoothing(Stateless):
    """Quadratic sampling: reshape the kept set's logits around their top.

    The logits become top + T * g((x - top) / T), g the transform above, so that the
    units after it (reading (x - top) / T) see g, and the top token keeps its logit.
    The record's "before" column still reads the logits from before the transform.


    Attributes:
        factor: The smoothing factor (> 0).
        curve: The smoothing curve, in [1, 3].
    """

    name: ClassVar[str] = "smoothing"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = right_after("temperature")
    params: ClassVar[type[SmoothingParams]] = SmoothingParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(SmoothingParams)
    group_titles: ClassVar[Mapping[str, str]] = {"smoothing": "smoothing: quadratic sampling"}
    label: ClassVar[str] = "smooth"
    row_label: ClassVar[str] = "smooth"
    factor: float
    curve: float

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Smoothing | None:
        """Built when smoothing_factor is on (> 0)."""
        params = settings.of(SmoothingParams)
        if not cls.is_on(settings):
            return None
        return cls(params.smoothing_factor, params.smoothing_curve)

    def apply(self, candidates: Candidates) -> None:
        """Replace the kept set's logits by their smoothed copy."""
        logits = candidates.logits
        temperature = candidates.temperature
        ids = candidates.ids
        if candidates.before is None:
            candidates.before = (logits, candidates.maximum)
        candidates.underflow_by = self.name
        workspace = candidates.workspace
        size = logits.shape[0]
        if ids is None:
            top = candidates.maximum
            gaps = scaled_gaps(
                logits, top, temperature, None, workspace.array("smoothed", size, np.float64)
            )
            shaped = smoothed_gaps(
                gaps, self.factor, self.curve, workspace.array("smoothing", size, np.float64)
            )
        else:
            top = candidates.top
            gaps = scaled_gaps(logits, top, temperature, ids)
            kept = smoothed_gaps(gaps, self.factor, self.curve)
            shaped = workspace.array("smoothed", size, np.float64)
            shaped.fill(-math.inf)
            shaped[ids] = kept
        with np.errstate(over="ignore"):  # far below the top at a high T: -inf, weight 0
            shaped *= temperature
        shaped += top
        candidates.logits = shaped
        candidates.maximum = top
        if ids is not None:  # the transform keeps the order: the top stays the argmax
            candidates.argmax = int(ids[0])
