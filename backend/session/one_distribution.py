"""The jobs that decode no second distribution refuse the settings that need one.

Guidance needs a negative prompt decoded beside each sequence, contrast a smaller
model's twin of it (`backend.session.loop`). A beam search and an explored tree fork
their sequences at every step and decode only the model's own distribution: run with
guidance or contrast on, their probabilities would be the model's alone under settings
that say otherwise. They refuse such settings before anything is decoded, in one line
that says which setting and how to switch it off.
"""

from __future__ import annotations

from sampling.errors import SamplescopeError
from sampling.samplers.contrast import Contrast, ContrastParams
from sampling.samplers.guidance import Guidance, GuidanceParams
from sampling.settings.record import SamplerSettings


def second_distribution(settings: SamplerSettings) -> str | None:
    """What in `settings` needs a second distribution beside each sequence, with the
    value that switches it off ("guidance_scale 2 needs a negative prompt beside each
    (1 is off)"); None: nothing does."""
    if Guidance.is_on(settings):
        scale = settings.of(GuidanceParams).guidance_scale
        return f"guidance_scale {scale:g} needs a negative prompt beside each (1 is off)"
    if Contrast.is_on(settings):
        beta = settings.of(ContrastParams).contrast_beta
        return f"contrast_beta {beta:g} needs a smaller model beside each (0 is off)"
    return None


def refuse_second_distribution(
    settings: SamplerSettings, job: str, error: type[SamplescopeError]
) -> None:
    """Raise `error` when `settings` need a second distribution that `job` (a beam
    search, explore) does not decode.

    Raises:
        SamplescopeError: Of the class `error`, saying which setting and its off value.
    """
    needs = second_distribution(settings)
    if needs is not None:
        raise error(f"{job} decodes one distribution per sequence, and {needs}")
