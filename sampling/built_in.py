"""The built-in sampler units, the registry of them alone, and the app's starting
settings.

A front door builds its registry from `BUILT_IN_UNITS` and the plugins it loads
(`tui.cli.main`); a test may build one from fewer units. `BUILT_IN_REGISTRY` is the
registry of every built-in unit and no plugin: what `DEFAULT_CHAT_SETTINGS` is made
with, and what a settings record made without a registry takes.
Adding a built-in sampler is its module in `sampling/samplers/` and its line here.
"""

from __future__ import annotations

from sampling.samplers.adaptive_p import AdaptiveP
from sampling.samplers.contrast import Contrast
from sampling.samplers.control_strength import ControlStrength
from sampling.samplers.dry import Dry
from sampling.samplers.epsilon_cutoff import EpsilonCutoff
from sampling.samplers.eta_cutoff import EtaCutoff
from sampling.samplers.grammar import Grammar
from sampling.samplers.guidance import Guidance
from sampling.samplers.logit_bias import LogitBias
from sampling.samplers.min_p import MinP
from sampling.samplers.min_tokens import MinTokens
from sampling.samplers.mirostat import Mirostat
from sampling.samplers.p_less import PLess
from sampling.samplers.penalties import Penalties
from sampling.samplers.reasoning_budget import ReasoningBudget
from sampling.samplers.smoothing import Smoothing
from sampling.samplers.tail_free import TailFree
from sampling.samplers.temperature import Temperature
from sampling.samplers.top_a import TopA
from sampling.samplers.top_k import TopK
from sampling.samplers.top_n_sigma import TopNSigma
from sampling.samplers.top_p import TopP
from sampling.samplers.typical import Typical
from sampling.samplers.unit import SamplerUnit
from sampling.samplers.xtc import Xtc
from sampling.settings.record import SamplerSettings, provide_built_in_registry
from sampling.settings.registry import Registry, build_registry

BUILT_IN_UNITS: tuple[type[SamplerUnit], ...] = (
    Penalties,
    Dry,
    TopNSigma,
    TopK,
    Typical,
    TopP,
    EpsilonCutoff,
    EtaCutoff,
    TailFree,
    TopA,
    PLess,
    MinP,
    Xtc,
    Temperature,
    Smoothing,
    AdaptiveP,
    Mirostat,
    Guidance,
    Contrast,
    ControlStrength,
    LogitBias,
    MinTokens,
    ReasoningBudget,
    Grammar,
)
"""Every built-in unit. Where each runs is its own `placement`; this order only decides
the order in which units joining an order at one place join it (the cutoffs before
min-p, in text-generation-webui's order)."""

BUILT_IN_REGISTRY = build_registry(BUILT_IN_UNITS)
"""The registry of every built-in unit and no plugin: what a settings record made
without a registry takes."""
provide_built_in_registry(BUILT_IN_REGISTRY)

CHAT_ORDER = BUILT_IN_REGISTRY.chat_order
"""The built-in registry's `Registry.chat_order` (plugins never join it)."""

TEMPERATURE_FIRST_ORDER = BUILT_IN_REGISTRY.default_order
"""The built-in registry's `Registry.default_order`: what `SamplerSettings()` holds."""


def chat_defaults(registry: Registry) -> SamplerSettings:
    """What the chat app and `generate` start from, made with `registry`: llama.cpp's
    defaults and its default chain, the temperature last."""
    return SamplerSettings(
        registry,
        temperature=0.8,
        top_k=40,
        top_p=0.95,
        min_p=0.05,
        repeat_last_n=64,
        seed=42,
        samplers=registry.chat_order,
    )


DEFAULT_CHAT_SETTINGS = chat_defaults(BUILT_IN_REGISTRY)
"""`chat_defaults` of the built-in registry."""
