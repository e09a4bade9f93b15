"""A sampler's state at one step, to rewind to: its random stream and mirostat's μ.

The penalty window and DRY see the sequence's history, which rewinding cuts itself;
what lives inside a `Sampler` is the generators' position and mirostat's running μ.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from sampling.sampler import Sampler
from sampling.settings import SamplerSettings


@dataclass(frozen=True, slots=True)
class SamplerState:
    """What a sampler held before one step."""

    settings: SamplerSettings
    inside: tuple[Any, float | None]


def snapshot(sampler: Sampler) -> SamplerState:
    """The sampler's state now (a copy: sampling on does not change it)."""
    inside = copy.deepcopy((sampler._sources, sampler._mu))
    return SamplerState(sampler.settings, inside)


def restore(sampler: Sampler, state: SamplerState) -> None:
    """Put `sampler` back as it was when `state` was taken."""
    sampler.settings = state.settings
    sources, mu = copy.deepcopy(state.inside)
    sampler._sources = sources
    sampler._mu = mu
