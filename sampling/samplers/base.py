"""What a unit's declarations answer unless the unit adds its own rule.

A unit declares its settings (`specs`); from them alone follow its on-rule (on when
any of its switches is on), its parts of the settings' one-line summary, and that it
keeps no state that the tokens so far do not give back. A unit that reports figures
of its step (`report`) has them described on the probability panel by name unless it
writes its own line (`describe`). `UnitBase` gives those answers; `Stateless`
(`sampling.samplers.unit`) and every built-in unit derive from it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Literal

from sampling.setting_spec import SettingSpec

if TYPE_CHECKING:
    from sampling.settings_record import SamplerSettings

Figure = float | int | bool | str | None
"""One figure a unit reports of its step: a number, a yes/no, a short text."""

Report = Mapping[str, Figure]
"""What a unit reports of one step: its figures by name (`SamplerUnit.report`)."""

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
    if spec.kind in ("bias", "texts", "order"):
        return f"{spec.key}={spec.format(value)}"
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


def figure_text(value: Figure) -> str:
    """A figure as the panel shows it: numbers to 3 significant digits."""
    if isinstance(value, bool) or value is None:
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if math.isfinite(value) else str(value)
    return str(value)


def described(label: str, report: Report) -> str:
    """A report as one line: the unit's label, then each figure by name."""
    return label + " " + " · ".join(f"{name} {figure_text(v)}" for name, v in report.items())


class UnitBase:
    """The answers a unit's declarations give (see the module doc).

    Attributes:
        keeps_state: Whether its state follows from the draws it heard (`accept`),
            which the tokens so far do not give back (mirostat's mu, adaptive-p's
            average): a search that scores continuations without drawing them (beam
            search) cannot run it. A state the tokens give back (a grammar's matcher,
            the reply's length) does not count.
    """

    __slots__ = ()

    name: ClassVar[str]
    label: ClassVar[str]
    specs: ClassVar[tuple[SettingSpec, ...]]
    keeps_state: ClassVar[bool] = False

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """On when any of its switches is on (a setting with an off value that needs no
        other); a unit without one is on when `from_settings` builds it."""
        said = specs_say_on(cls.specs, settings)
        if said is not None:
            return said
        from_settings = getattr(cls, "from_settings", None)
        return from_settings is not None and from_settings(settings) is not None

    @classmethod
    def summary(
        cls, settings: SamplerSettings, style: SummaryStyle = "active"
    ) -> Mapping[str, str]:
        """Its parts of the settings' one-line summary, by the setting each stands for
        (a setting whose needed one is off is left out)."""
        return declared_summary(cls.specs, settings, style)

    def report(self) -> Report | None:
        """The figures of the step it just ran, by name (None: nothing to report)."""
        return None

    @classmethod
    def describe(cls, report: Report, settings: SamplerSettings) -> str:
        """Its line on the probability panel for a step that reported `report` (under
        that step's `settings`)."""
        del settings
        return described(cls.label, report)


def description(unit: type | None, name: str, report: Report, settings: SamplerSettings) -> str:
    """The panel's line for what the unit `name` (its class, or None when it is not
    loaded) reported of a step: its own `describe`, else its figures by name (a
    plugin's `describe` that fails falls back to those too)."""
    describe = getattr(unit, "describe", None)
    if callable(describe):
        try:
            return str(describe(report, settings))
        except Exception:  # a plugin's own code: its figures by name say as much
            pass
    return described(str(getattr(unit, "label", name)), report)


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
