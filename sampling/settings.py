"""The sampler's settings as the rest of samplescope reads them: the record
(`sampling.settings_record`) connected to the registry, the app's starting point
(`DEFAULT_CHAT_SETTINGS`) and the one-line summary.

Importing this module hands the record the registry in use (its settings, the
units' placements and on-rules, the default order).
"""

from __future__ import annotations

from typing import Literal

from sampling.registry import CHAT_ORDER, TEMPERATURE_FIRST_ORDER, registry
from sampling.samplers.penalties import PenaltiesParams
from sampling.samplers.top_p import TopPParams, TopPScope
from sampling.samplers.xtc import Xtc
from sampling.setting_spec import GREEDY_TEMPERATURE, MAX_SEED, SettingSpec
from sampling.settings_record import DrawMethod, RngName, SamplerSettings, connect

#: "active": only what is switched on, e.g. "t=0.8 k=40 p=0.95 min_p=0.05".
#: "fixed": the same main knobs every time with fixed decimals, so successive lines
#: line up, e.g. "T 0.80 · k 40 · p 0.95 · min-p 0.05 · rep 1.00×64".
SummaryStyle = Literal["active", "fixed"]

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
    """The settings in one short line (never the seed).

    Args:
        settings: The settings to describe.
        style: "active" names only what is switched on and changes something:
            "greedy k=5", "t=0.8 k=40 p=0.95 min_p=0.05", "t=1 rep=1.3/64 gumbel".
            "fixed" shows the main knobs every time with two decimals:
            "T 0.80 · k 40 · p 0.95 · min-p 0.05 · rep 1.00×64".
    """
    specs = registry().settings
    if style == "fixed":
        return " · ".join(_fixed_part(spec, settings) for spec in specs if spec.fixed_key)
    parts = (_active_part(spec, settings) for spec in specs)
    return " ".join(part for part in parts if part)


def _fixed_part(spec: SettingSpec, settings: SamplerSettings) -> str:
    value = settings.value(spec.name)
    text = f"{spec.fixed_key} {value:.2f}" if spec.kind == "float" else f"{spec.fixed_key} {value}"
    if spec.name == "repeat_penalty":  # the window it looks back over
        text += f"×{settings.of(PenaltiesParams).repeat_last_n}"
    return text


def _is_on(spec: SettingSpec, settings: SamplerSettings) -> bool:
    """Whether a setting changes anything: off if at its off value (temperature: greedy)."""
    if spec.name == "temperature":
        return not settings.greedy
    if spec.name == "xtc_probability":  # a threshold above 0.5 switches it off too
        return Xtc.is_on(settings)
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
        return None if order in USUAL_ORDERS else f"order={spec.format(order)}"
    if spec.name == "temperature_last":  # llama.cpp's chain is "t-last"; others name the order
        return spec.summary_key if settings.order == CHAT_ORDER and not settings.greedy else None
    if spec.name == "dry_sequence_breakers":  # shown only when changed
        return (
            None
            if value == spec.default
            or not _is_on(registry().settings_by_name["dry_multiplier"], settings)
            else f"{spec.key}={spec.format(value)}"
        )
    if spec.needs is not None and not _is_on(registry().settings_by_name[spec.needs], settings):
        return None
    if spec.kind in ("bias", "texts", "order"):  # shown when on and changed
        shown = _is_on(spec, settings) and value != spec.default
        return f"{spec.key}={spec.format(value)}" if shown else None
    if not _is_on(spec, settings):
        return None
    if spec.kind in ("bool", "text"):  # a grammar or a schema is named, never written out
        return spec.summary_key or spec.name
    if spec.kind == "choice":
        return str(value)
    text = f"{spec.key}={value}" if spec.kind == "int" else f"{spec.key}={value:g}"
    scope = settings.of(TopPParams).top_p_scope
    if spec.name == "top_p" and scope != "kept":
        text += f"({scope})"
    if spec.name == "repeat_penalty":
        text += f"/{settings.of(PenaltiesParams).repeat_last_n}"
    return text
