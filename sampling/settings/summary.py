"""The settings in one short line: the summary a reply, a column or a run shows.

Each unit of the registry the settings were made with gives its own parts (its
`summary`, else what its declarations give: `sampling.settings.declared`); the draw and
the order add theirs; the parts are shown in the registry's display order.
"""

from __future__ import annotations

from sampling.settings.declared import SummaryStyle, declared_summary, summary_of
from sampling.settings.record import Catalogue, SamplerSettings
from sampling.settings.registry import DRAW_SETTINGS

__all__ = ["SummaryStyle", "settings_summary", "usual_orders"]


def usual_orders(registry: Catalogue) -> tuple[tuple[str, ...], ...]:
    """Orders the active summary leaves unnamed: the temperature first, or llama.cpp's
    chain (then "t-last" says so)."""
    return (registry.default_order, registry.chat_order)


def settings_summary(settings: SamplerSettings, style: SummaryStyle = "active") -> str:
    """The settings in one short line (never the seed).

    Args:
        settings: The settings to describe.
        style: "active" names only what is switched on and changes something:
            "greedy k=5", "t=0.8 k=40 p=0.95 min_p=0.05", "t=1 rep=1.3/64 gumbel".
            "fixed" shows the main knobs every time with two decimals:
            "T 0.80 · k 40 · p 0.95 · min-p 0.05 · rep 1.00×64".
    """
    known = settings.registry
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
    known = settings.registry
    order = settings.order
    if order == known.chat_order and not settings.greedy:
        parts["temperature_last"] = "t-last"
    elif order not in usual_orders(known):
        parts["samplers"] = f"order={known.settings_by_name['samplers'].format(order)}"
    return parts
