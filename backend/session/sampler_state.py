"""A sampler's state at one step, to rewind to: its random streams and mirostat's μ.

The penalty window and DRY see the sequence's history, which rewinding cuts itself;
what lives inside a `Sampler` is each generator's position and mirostat's running μ.
Taken before every sampled token, so it must be cheap: a generator's position is its
bit generator's state (a small dict), not a copy of the generator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sampling.rng import Pcg64Source, UniformSource, Xorshift128Source
from sampling.sampler import Sampler
from sampling.settings import SamplerSettings


@dataclass(frozen=True, slots=True)
class SamplerState:
    """What a sampler held before one step.

    Attributes:
        settings: Its settings then.
        mu: Mirostat's running μ (None: not started).
        streams: Each generator made so far, by kind, with its position.
    """

    settings: SamplerSettings
    mu: float | None
    streams: tuple[tuple[str, UniformSource, Any], ...]


def _position(source: UniformSource) -> Any:
    if isinstance(source, Pcg64Source):
        return source._generator.bit_generator.state
    if isinstance(source, Xorshift128Source):
        return source._state
    raise TypeError(f"cannot keep the position of a {type(source).__name__}")


def _set_position(source: UniformSource, position: Any) -> None:
    if isinstance(source, Pcg64Source):
        source._generator.bit_generator.state = position
    elif isinstance(source, Xorshift128Source):
        source._state = position


def snapshot(sampler: Sampler) -> SamplerState:
    """The sampler's state now (sampling on does not change it)."""
    sources = sampler._sources
    streams = tuple((kind, source, _position(source)) for kind, source in sources.items())
    return SamplerState(sampler.settings, sampler._mu, streams)


def restore(sampler: Sampler, state: SamplerState) -> None:
    """Put `sampler` back as it was when `state` was taken."""
    sampler.settings = state.settings
    sampler._mu = state.mu
    sources = {}
    for kind, source, position in state.streams:
        _set_position(source, position)
        sources[kind] = source
    sampler._sources = sources
