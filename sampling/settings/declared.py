"""What a unit's setting declarations answer by themselves: whether a setting is a
switch, the on-rule the switches give, and each setting's part of the one-line summary.

These read a setting's spec and a settings record only, so the summary
(`sampling.settings.summary`) and the units' base (`sampling.samplers.base`) share them
without the settings knowing any unit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from sampling.settings.spec import SettingSpec

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings

SummaryStyle = Literal["active", "fixed"]
"""How the settings' summary reads (`sampling.settings.settings_summary`): "active",
only what is switched on ("t=0.8 k=40 p=0.95 min_p=0.05"); "fixed", the same main
knobs every time with fixed decimals, so successive lines line up ("T 0.80 · k 40 ·
p 0.95 · min-p 0.05 · rep 1.00×64")."""


def is_switch(spec: SettingSpec) -> bool:
    """Whether a setting switches its unit on and off by itself: it has an off value
    and needs no other setting on."""
    has_off = spec.off is not None or spec.off_below is not None or spec.off_at_or_below is not None
    return has_off and spec.needs is None


def specs_say_on(specs: tuple[SettingSpec, ...], settings: SamplerSettings) -> bool | None:
    """The on-rule the settings' declarations give: on when any switch is on; None when
    the unit declares no switch."""
    switches = [spec for spec in specs if is_switch(spec)]
    if not switches:
        return None
    return any(not spec.is_off(settings.value(spec.name)) for spec in switches)


def summary_part(
    spec: SettingSpec, settings: SamplerSettings, style: SummaryStyle = "active"
) -> str | None:
    """One setting's part of the summary as its declaration gives it.

    "active": nothing when it is off (or a setting it needs is off); a switch by its
    summary word, a choice by its value, the rest as key=value. "fixed": its fixed key
    and value (nothing without a fixed key).
    """
    value = settings.value(spec.name)
    if style == "fixed":
        if spec.fixed_key is None:
            return None
        shown = f"{value:.2f}" if spec.kind == "float" else f"{value}"
        return f"{spec.fixed_key} {shown}"
    if spec.is_off(value):
        return None
    if spec.kind in ("bias", "texts", "order"):  # shown when changed from its default
        return None if value == spec.default else f"{spec.key}={spec.format(value)}"
    if spec.kind in ("bool", "text"):  # a grammar or a schema is named, never written out
        return spec.summary_key or spec.name
    if spec.kind == "choice":
        return str(value)
    return f"{spec.key}={value}" if spec.kind == "int" else f"{spec.key}={value:g}"


def declared_summary(
    specs: tuple[SettingSpec, ...], settings: SamplerSettings, style: SummaryStyle = "active"
) -> dict[str, str]:
    """Some settings' parts of the summary as their declarations give them, by name (a
    setting whose needed one is off is left out)."""
    by_name = {spec.name: spec for spec in specs}
    parts: dict[str, str] = {}
    for spec in specs:
        needed = by_name.get(spec.needs) if spec.needs is not None else None
        if style == "active" and needed is not None and needed.is_off(settings.value(needed.name)):
            continue
        part = summary_part(spec, settings, style)
        if part is not None:
            parts[spec.name] = part
    return parts


def summary_of(
    unit: type, settings: SamplerSettings, style: SummaryStyle = "active"
) -> Mapping[str, str]:
    """A unit's parts of the settings' summary: its own `summary`, else (a plugin that
    does not derive from `UnitBase`, or whose `summary` fails) what its declarations
    give."""
    summary = getattr(unit, "summary", None)
    if callable(summary):
        try:
            parts = summary(settings, style)
            if isinstance(parts, Mapping):
                return parts
        except Exception:  # a plugin's own code: its declarations answer instead
            pass
    return declared_summary(getattr(unit, "specs", ()), settings, style)
