"""What a unit's declarations answer unless the unit adds its own rule.

A unit declares its settings (`specs`); from them alone follow its on-rule (on when
any of its switches is on), its parts of the settings' one-line summary, and that it
keeps no state that the tokens so far do not give back. A unit that reports figures
of its step (`report`) has them described on the probability panel by name unless it
writes its own line (`describe`). `UnitBase` gives those answers; `Stateless`
(`sampling.samplers.unit`) and every built-in unit derive from it.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, ClassVar

from sampling.settings.declared import (
    SummaryStyle,
    declared_summary,
    is_switch,
    specs_say_on,
    summary_of,
    summary_part,
)
from sampling.settings.spec import SettingSpec

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings

TokenFigures = tuple[tuple[int, float], ...]
"""Tokens with a number each, in order: a distribution's top tokens and their
probabilities (guidance's, contrast's), or the change a unit made to each."""

Figure = float | int | bool | str | TokenFigures | None
"""One figure a unit reports of its step: a number, a yes/no, a short text, or a
few tokens with a number each."""

Report = Mapping[str, Figure]
"""What a unit reports of one step: its figures by name (`SamplerUnit.report`)."""

TokenText = Callable[[int], str]
"""A token id as a line shows it: its text where the model is at hand (the panel's
pieces), else its number (`token_number`)."""


def token_number(token: int) -> str:
    """A token as its id: "#13" (where no model gives its text)."""
    return f"#{token}"


def percent_text(value: float) -> str:
    """A share as the probability panel writes it: "12.5%", "100%", "0.0%", "0"."""
    if value >= 0.9995:
        return "100%"
    if value < 0.0005:
        return "0.0%" if value > 0 else "0"
    return f"{value * 100:.1f}%"


def figure_text(value: Figure, piece: TokenText = token_number) -> str:
    """A figure as the panel shows it: numbers to 3 significant digits, tokens by
    `piece`."""
    if isinstance(value, bool) or value is None:
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if math.isfinite(value) else str(value)
    if isinstance(value, tuple):
        return " ".join(f"{piece(token)}:{figure_text(number)}" for token, number in value)
    return str(value)


def described(label: str, report: Report, piece: TokenText = token_number) -> str:
    """A report as one line: the unit's label, then each figure by name (tokens by
    `piece`)."""
    figures = (f"{name} {figure_text(v, piece)}" for name, v in report.items())
    return label + " " + " · ".join(figures)


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


def description(
    unit: type | None,
    name: str,
    report: Report,
    settings: SamplerSettings,
    piece: TokenText = token_number,
) -> str:
    """The panel's line for what the unit `name` (its class, or None when it is not
    loaded) reported of a step: its own `describe`, else its figures by name (a
    plugin's `describe` that fails falls back to those too). Tokens read as `piece`
    gives them, in a `describe` that takes a `piece` keyword (guidance's, contrast's)
    and in the figures by name."""
    describe = getattr(unit, "describe", None)
    if callable(describe):
        try:
            if _takes_piece(describe):
                return str(describe(report, settings, piece=piece))
            return str(describe(report, settings))
        except Exception:  # a plugin's own code: its figures by name say as much
            pass
    return described(str(getattr(unit, "label", name)), report, piece)


@cache
def _takes_piece(describe: Callable[..., object]) -> bool:
    """Whether a `describe` takes the token text as a `piece` keyword (the declared
    signature, `describe(report, settings)`, does not need to)."""
    try:
        return "piece" in inspect.signature(describe).parameters
    except (TypeError, ValueError):
        return False


__all__ = [
    "Figure",
    "Report",
    "SummaryStyle",
    "TokenFigures",
    "TokenText",
    "UnitBase",
    "declared_summary",
    "described",
    "description",
    "figure_text",
    "is_switch",
    "percent_text",
    "specs_say_on",
    "summary_of",
    "summary_part",
    "token_number",
]
