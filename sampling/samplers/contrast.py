"""Contrast with a smaller model: prefer what the large model knows and the small does not.

With a second, smaller model of the same vocabulary decoding the same text in step
(`backend.session.loop`, `--contrast-model`), each step's score is

    (1 + beta) * logit_big - beta * logit_small

over the tokens whose large-model probability is at least `alpha` times the largest
(O'Brien & Lewis 2023, "Contrastive decoding improves reasoning in large language
models"); the other tokens are removed. beta 0 is off; beta 1 on log-probabilities is
Li et al. 2023's contrastive decoding (a constant shift per model does not change the
softmax, so logits and log-probabilities give the same distribution).

The unit runs first, outside the order (after guidance, before the logit bias), and
reads the small model's logits from the step's context (`StepContext.small`). Each
step it reports what it did as guidance does (`report`, the figures of
`sampling.samplers.guidance_report`: the large model's top tokens as the conditional,
the small model's as the other, the scores' as the combination, beta as the scale).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from sampling.candidates import Candidates
from sampling.errors import LogitsError
from sampling.logits import FloatArray
from sampling.samplers.base import Report, TokenText, token_number
from sampling.samplers.guidance_report import guidance_report, log_softmax, report_line
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import FIRST, Placement
from sampling.settings.spec import SettingSpec, SliderRange
from sampling.weights import Float64Array

if TYPE_CHECKING:
    from sampling.samplers.unit import StepContext
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class ContrastParams:
    """Contrast's parameters, one field per setting.

    Attributes:
        contrast_beta: How strongly the small model's logits are subtracted; 0 is off.
        contrast_alpha: Keep only the tokens whose large-model probability is at least
            this share of the largest.
    """

    contrast_beta: float = setting(
        SettingSpec(
            "contrast_beta",
            "float",
            default=0.0,
            off=0.0,
            group="contrast",
            label="contrast β",
            help="contrast with --contrast-model: (1 + beta) * big - beta * small on the logits;"
            " 0 is off",
            minimum=0.0,
            slider=SliderRange(0.0, 2.0, hard_min=0.0, hard_max=100.0, fine=0.05, coarse=0.25),
            short_key="beta",
        )
    )
    contrast_alpha: float = setting(
        SettingSpec(
            "contrast_alpha",
            "float",
            default=0.1,
            group="contrast",
            label="contrast α",
            help="contrast: keep the tokens whose large-model probability is at least alpha"
            " times the largest",
            minimum=0.0,
            maximum=1.0,
            slider=SliderRange(0.0, 1.0, hard_min=0.0, hard_max=1.0, fine=0.01, coarse=0.1),
            short_key="alpha",
            needs="contrast_beta",
        )
    )


def contrast_scores(big: FloatArray, small: FloatArray, beta: float, alpha: float) -> Float64Array:
    """`(1 + beta) * big - beta * small` where `big`'s probability is at least `alpha`
    times its largest, -inf elsewhere."""
    big64 = np.asarray(big, dtype=np.float64)
    scores: Float64Array = (1.0 + beta) * big64 - beta * np.asarray(small, dtype=np.float64)
    if alpha > 0.0:
        floor = float(np.max(big64)) + math.log(alpha)
        scores[big64 < floor] = -np.inf
    return scores


@dataclass(slots=True, eq=False)
class Contrast(Stateless):
    """Contrast the large model's logits with the small model's (see the module doc).

    Attributes:
        beta: The contrast's strength (> 0).
        alpha: The plausibility share.
        small: The small model's logits for the step begun (None: none given).
        last: What the last step did (None: it had no small model's logits).
    """

    name: ClassVar[str] = "contrast"
    kind: ClassVar[UnitKind] = "logits"
    placement: ClassVar[Placement] = FIRST
    params: ClassVar[type[ContrastParams]] = ContrastParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(ContrastParams)
    group_titles: ClassVar[Mapping[str, str]] = {"contrast": "contrast: a smaller model"}
    label: ClassVar[str] = "contrast"
    row_label: ClassVar[str] = "contr"
    distributions: ClassVar[tuple[str, str, str]] = ("large", "small", "contrast")
    """What its report's top lists (`TOP_LISTS`) are called on the panel."""
    draws: ClassVar[bool] = True  # for `begin`, which takes the small model's logits
    beta: float
    alpha: float
    small: FloatArray | None = None
    last: Report | None = None

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Contrast | None:
        """Built when beta > 0."""
        if not cls.is_on(settings):
            return None
        params = settings.of(ContrastParams)
        return cls(params.contrast_beta, params.contrast_alpha)

    @classmethod
    def describe(
        cls, report: Report, settings: SamplerSettings, piece: TokenText = token_number
    ) -> str:
        """ "contrast ×1 · KL 0.42 nats · ↑ ␣sea +12.0% · ↓ ␣sand -8.1%" (KL: the large
        model's distribution from the small one's; tokens as `piece` shows them)."""
        del settings
        return report_line(cls.name, report, piece)

    def report(self) -> Report | None:
        """What the step did (None: it had no small model's logits)."""
        return self.last

    def begin(self, step: StepContext) -> None:
        """Take the small model's logits for this step."""
        self.small = step.small

    def apply(self, candidates: Candidates) -> None:
        """Replace the logits by the contrast's scores (unchanged without a small model).

        Raises:
            LogitsError: The small model's logits are not the vocabulary's length.
        """
        small = self.small
        self.last = None
        if small is None:
            return
        logits = candidates.logits
        if small.shape != logits.shape:
            raise LogitsError(
                f"the small model's logits have {small.shape[0]} values for a vocabulary"
                f" of {logits.shape[0]}"
            )
        scores = contrast_scores(logits, small, self.beta, self.alpha)
        candidates.replace_logits(scores)
        if self.alpha > 0.0:
            candidates.cut_by = self.name
        self.last = guidance_report(log_softmax(logits), log_softmax(small), scores, self.beta)
