"""The settings in one short line: the summary a reply, a column or a run shows.

It reads each setting's spec and on-rule from the registry the settings were made
with, and names no unit's parameter record.
"""

from __future__ import annotations

from typing import Literal

from sampling.settings.record import Catalogue, SamplerSettings
from sampling.settings.spec import SettingSpec

#: "active": only what is switched on, e.g. "t=0.8 k=40 p=0.95 min_p=0.05".
#: "fixed": the same main knobs every time with fixed decimals, so successive lines
#: line up, e.g. "T 0.80 · k 40 · p 0.95 · min-p 0.05 · rep 1.00×64".
SummaryStyle = Literal["active", "fixed"]


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
    specs = settings.registry.settings
    if style == "fixed":
        return " · ".join(_fixed_part(spec, settings) for spec in specs if spec.fixed_key)
    parts = (_active_part(spec, settings) for spec in specs)
    return " ".join(part for part in parts if part)


def _fixed_part(spec: SettingSpec, settings: SamplerSettings) -> str:
    value = settings.value(spec.name)
    text = f"{spec.fixed_key} {value:.2f}" if spec.kind == "float" else f"{spec.fixed_key} {value}"
    if spec.name == "repeat_penalty":  # the window it looks back over
        text += f"×{settings.value('repeat_last_n')}"
    return text


def _is_on(spec: SettingSpec, settings: SamplerSettings) -> bool:
    """Whether a setting changes anything: off if at its off value (temperature: greedy)."""
    if spec.name == "temperature":
        return not settings.greedy
    if spec.name == "xtc_probability":  # a threshold above 0.5 switches it off too
        return settings.registry.is_on("xtc", settings)
    return not spec.is_off(settings.value(spec.name))


def _active_part(spec: SettingSpec, settings: SamplerSettings) -> str | None:
    value = settings.value(spec.name)
    if spec.name == "temperature":  # never off: shown always, as "greedy" below 1e-6
        return "greedy" if settings.greedy else f"{spec.key}={value:g}"
    if spec.name == "seed":  # a run's seed is given next to the summary, if at all
        return None
    if spec.name in ("top_p_scope", "repeat_last_n"):  # inside top_p's and repeat_penalty's
        return None
    if spec.name == "samplers":  # the order that runs, unless one of the two usual ones
        order = settings.order
        return None if order in usual_orders(settings.registry) else f"order={spec.format(order)}"
    if spec.name == "temperature_last":  # llama.cpp's chain is "t-last"; others name the order
        return (
            spec.summary_key
            if settings.order == settings.registry.chat_order and not settings.greedy
            else None
        )
    if spec.name == "dry_sequence_breakers":  # shown only when changed
        return (
            None
            if value == spec.default
            or not _is_on(settings.registry.settings_by_name["dry_multiplier"], settings)
            else f"{spec.key}={spec.format(value)}"
        )
    if spec.kind in ("bias", "texts", "order"):
        return None if not _is_on(spec, settings) else f"{spec.key}={spec.format(value)}"
    if not _is_on(spec, settings):
        return None
    if spec.needs is not None and not _is_on(
        settings.registry.settings_by_name[spec.needs], settings
    ):
        return None
    if spec.kind in ("bool", "text"):  # a grammar or a schema is named, never written out
        return spec.summary_key or spec.name
    if spec.kind == "choice":
        return str(value)
    text = f"{spec.key}={value}" if spec.kind == "int" else f"{spec.key}={value:g}"
    if spec.name == "top_p" and (scope := settings.value("top_p_scope")) != "kept":
        text += f"({scope})"
    if spec.name == "repeat_penalty":
        text += f"/{settings.value('repeat_last_n')}"
    return text
