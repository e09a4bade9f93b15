"""Classifier-free guidance with a negative prompt: steer away from another distribution.

At every token the model's logits for the reply (the conditional) and for the same
reply after a negative prompt (the unconditional, decoded beside it in its own
sequence: `backend.session.negative`) are combined on log-probabilities:

    guided = scale * (log_softmax(cond) - log_softmax(uncond)) + log_softmax(uncond)

as transformers' `UnbatchedClassifierFreeGuidanceLogitsProcessor` and llama.cpp's
former `llama_sample_classifier_free_guidance` compute it. Scale 1 is the
conditional alone (the unit is off), 0 the unconditional alone, above 1 a push away
from what the negative prompt makes likely.

The unit runs first, outside the order (before the logit bias, so a ban holds at any
scale), and reads the second distribution's logits from the step's context
(`StepContext.second`). Each step it reports what it did (`report`, by the figures of
`sampling.samplers.guidance_report`): both distributions' and the combination's top
tokens, which tokens it raised and lowered the most, and how far apart the two
distributions are.
"""

from __future__ import annotations

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

if TYPE_CHECKING:
    from sampling.samplers.unit import StepContext
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class GuidanceParams:
    """Guidance's parameters, one field per setting.

    Attributes:
        guidance_scale: How strongly the reply is pushed away from the negative prompt
            (1 is off, 0 the negative prompt's distribution alone).
        negative_prompt: The negative prompt: a user turn (in completion mode the whole
            document); empty is the empty turn.
        negative_system: The negative prompt's system prompt (empty: none).
    """

    guidance_scale: float = setting(
        SettingSpec(
            "guidance_scale",
            "float",
            default=1.0,
            off=1.0,
            group="guidance",
            label="guidance",
            help="classifier-free guidance: scale * (cond - uncond) + uncond on log-probabilities,"
            " uncond the reply after --negative-prompt; 1 is off, 0 the negative alone",
            slider=SliderRange(0.0, 5.0, hard_min=-100.0, hard_max=100.0, fine=0.05, coarse=0.5),
            short_key="cfg",
        )
    )
    negative_prompt: str = setting(
        SettingSpec(
            "negative_prompt",
            "text",
            default="",
            off="",
            group="guidance",
            label="negative",
            help="the negative prompt guidance steers away from: a user turn (the whole"
            " document in completion mode); empty is the empty turn",
            short_key="negative",
            summary_key="negative",
            needs="guidance_scale",
        )
    )
    negative_system: str = setting(
        SettingSpec(
            "negative_system",
            "text",
            default="",
            off="",
            group="guidance",
            label="neg. system",
            help="the negative prompt's system prompt (empty: none)",
            needs="guidance_scale",
        )
    )


@dataclass(slots=True, eq=False)
class Guidance(Stateless):
    """Combine the reply's logits with the negative prompt's (see the module doc).

    Attributes:
        scale: The guidance scale (never 1: the unit is off there).
        second: The negative sequence's logits for the step begun (None: none given).
        last: What the last step did (None: it had no second distribution).
    """

    name: ClassVar[str] = "guidance"
    kind: ClassVar[UnitKind] = "logits"
    placement: ClassVar[Placement] = FIRST
    params: ClassVar[type[GuidanceParams]] = GuidanceParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(GuidanceParams)
    group_titles: ClassVar[Mapping[str, str]] = {
        "guidance": "guidance: negative prompt (runs first)"
    }
    label: ClassVar[str] = "guide"
    row_label: ClassVar[str] = "guide"
    distributions: ClassVar[tuple[str, str, str]] = ("reply", "negative", "guided")
    """What its report's top lists (`TOP_LISTS`) are called on the panel."""
    draws: ClassVar[bool] = True  # for `begin`, which takes the second distribution
    scale: float
    second: FloatArray | None = None
    last: Report | None = None

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Guidance | None:
        """Built when the scale is not 1."""
        return cls(settings.of(GuidanceParams).guidance_scale) if cls.is_on(settings) else None

    @classmethod
    def describe(
        cls, report: Report, settings: SamplerSettings, piece: TokenText = token_number
    ) -> str:
        """ "guidance ×1.5 · KL 0.42 nats · ↑ ␣sea +12.0% · ↓ ␣sand -8.1%" (tokens as
        `piece` shows them)."""
        del settings
        return report_line(cls.name, report, piece)

    def report(self) -> Report | None:
        """What the step did (None: it had no second distribution)."""
        return self.last

    def begin(self, step: StepContext) -> None:
        """Take the negative sequence's logits for this step."""
        self.second = step.second

    def apply(self, candidates: Candidates) -> None:
        """Replace the logits by the guided ones (unchanged without a second distribution:
        a reply that started unguided has no negative sequence beside it).

        Raises:
            LogitsError: The second distribution's length is not the vocabulary's, or it
                has no finite value.
        """
        second = self.second
        self.last = None
        if second is None:
            return
        logits = candidates.logits
        if second.shape != logits.shape:
            raise LogitsError(
                f"the negative prompt's logits have {second.shape[0]} values for a"
                f" vocabulary of {logits.shape[0]}"
            )
        if not np.isfinite(second).any():
            raise LogitsError("the negative prompt's logits have no finite value")
        cond_log, uncond_log = log_softmax(logits), log_softmax(second)
        guided = self.scale * (cond_log - uncond_log) + uncond_log
        candidates.replace_logits(guided)
        self.last = guidance_report(cond_log, uncond_log, guided, self.scale)
