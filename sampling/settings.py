"""The sampler's settings as the rest of samplescope reads them: the record
(`sampling.settings_record`) connected to the registry, the app's starting point
(`DEFAULT_CHAT_SETTINGS`) and the one-line summary.

Importing this module hands the record the registry in use (its settings, the
units' placements and on-rules, the default order).
"""

from __future__ import annotations

from sampling.registry import CHAT_ORDER, DRAW_SETTINGS, TEMPERATURE_FIRST_ORDER, registry
from sampling.samplers.base import SummaryStyle, declared_summary, summary_of
from sampling.samplers.top_p import TopPScope
from sampling.setting_spec import GREEDY_TEMPERATURE, MAX_SEED, SettingSpec
from sampling.settings_record import DrawMethod, RngName, SamplerSettings, connect

__all__ = [
    "DEFAULT_CHAT_SETTINGS",
    "GREEDY_TEMPERATURE",
    "MAX_SEED",
    "USUAL_ORDERS",
    "DrawMethod",
    "RngName",
    "SamplerSettings",
    "SummaryStyle",
    "TopPScope",
    "find_setting",
    "settings_summary",
]


connect(registry)


def find_setting(key: str) -> SettingSpec | None:
    """The setting a key names: a short key ("t"), a field name, or one with dashes."""
    return registry().find_setting(key)


DEFAULT_CHAT_SETTINGS = SamplerSettings(
    temperature=0.8,
    top_k=40,
    top_p=0.95,
    min_p=0.05,
    repeat_last_n=64,
    seed=42,
    samplers=CHAT_ORDER,
)
"""What the chat app and `generate` start from: llama.cpp's defaults and its default
chain, the temperature last."""

USUAL_ORDERS = (TEMPERATURE_FIRST_ORDER, CHAT_ORDER)
"""Orders the active summary leaves unnamed: the temperature first, or llama.cpp's chain
(then "t-last" says so)."""


def settings_summary(settings: SamplerSettings, style: SummaryStyle = "active") -> str:
    """The settings in one short line (never the seed): each unit says its parts
    (`SamplerUnit.summary`), the draw and the order theirs, in the settings' order.

    Args:
        settings: The settings to describe.
        style: "active" names only what is switched on and changes something:
            "greedy k=5", "t=0.8 k=40 p=0.95 min_p=0.05", "t=1 rep=1.3/64 gumbel".
            "fixed" shows the main knobs every time with two decimals:
            "T 0.80 · k 40 · p 0.95 · min-p 0.05 · rep 1.00×64".
    """
    known = registry()
    parts = _drawn_and_ordered(settings, style)
    for unit in known.units:
        parts.update(summary_of(unit, settings, style))
    shown = (parts[spec.name] for spec in known.settings if spec.name in parts)
    return (" · " if style == "fixed" else " ").join(shown)


def _drawn_and_ordered(settings: SamplerSettings, style: SummaryStyle) -> dict[str, str]:
    """The draw's parts (its method and generator when not the usual; never the seed,
    which a run gives next to the summary) and the order's: unnamed when one of the
    two usual orders, llama.cpp's chain as "t-last"."""
    if style == "fixed":
        return {}
    parts = declared_summary(tuple(s for s in DRAW_SETTINGS if s.name != "seed"), settings)
    order = settings.order
    if order == CHAT_ORDER and not settings.greedy:
        parts["temperature_last"] = "t-last"
    elif order not in USUAL_ORDERS:
        parts["samplers"] = f"order={registry().settings_by_name['samplers'].format(order)}"
    return parts
