"""Switching a sampler on names it in the order: the samplers llama.cpp's chain lacks.

The chain runs the samplers its order names. When a setting switches on a sampler
the order does not name (`--top-a 0.2` with an order given as llama.cpp's), its
name joins the order where the sampler's tool runs it, so that the stored order
names every sampler that ran.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sampling.settings import SamplerSettings

_CUTOFFS = ("epsilon_cutoff", "eta_cutoff", "tfs", "top_a")
"""The cutoffs llama.cpp's default chain lacks, in text-generation-webui's order."""


def with_switched_on(settings: SamplerSettings) -> tuple[str, ...]:
    """`settings.samplers` with the name of each sampler llama.cpp's default chain
    lacks that the settings switch on, where the order lacks it.

    A cutoff (epsilon, eta, tail-free, top-a) goes before the first of min-p, XTC
    and the temperature the order holds; smoothing right after the temperature;
    adaptive-p last (it draws the token). The stored order then names every sampler
    that ran, and an order that already names one keeps it where it is.
    """
    samplers = settings.samplers
    on = {
        "epsilon_cutoff": settings.epsilon_cutoff > 0.0,
        "eta_cutoff": settings.eta_cutoff > 0.0,
        "tfs": settings.tfs < 1.0,
        "top_a": settings.top_a > 0.0,
        "smoothing": settings.smoothing_factor > 0.0,
        "adaptive_p": settings.adaptive_target >= 0.0,
    }
    missing = [name for name, is_on in on.items() if is_on and name not in samplers]
    if not missing:
        return samplers
    order = list(samplers)
    cutoffs = [name for name in _CUTOFFS if name in missing]
    if cutoffs:
        before = next((n for n in ("min_p", "xtc", "temperature") if n in order), None)
        at = order.index(before) if before is not None else len(order)
        order[at:at] = cutoffs
    if "smoothing" in missing:
        at = order.index("temperature") + 1 if "temperature" in order else len(order)
        order.insert(at, "smoothing")
    if "adaptive_p" in missing:
        order.append("adaptive_p")
    return tuple(order)
