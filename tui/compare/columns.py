"""Where the compare view's columns come from: presets, or one setting varied.

Pure helpers (no widgets), so the command palette, the edit form and the tests
share them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from sampling.errors import SettingsError
from sampling.settings import SamplerSettings

MIN_COLUMNS = 2
MAX_COLUMNS = 4

#: The fields a column may vary, in the order the edit form offers them.
VARIABLE_FIELDS: tuple[str, ...] = (
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "repeat_penalty",
    "repeat_last_n",
    "frequency_penalty",
    "presence_penalty",
    "top_p_scope",
    "temperature_last",
    "draw",
    "rng",
)

#: Values offered by "Compare: vary <field>" in the command palette.
DEFAULT_VARIATIONS: dict[str, tuple[Any, ...]] = {
    "temperature": (0.5, 0.8, 1.2, 1.5),
    "top_k": (1, 10, 40, 0),
    "top_p": (0.5, 0.8, 0.95, 1.0),
    "min_p": (0.0, 0.05, 0.1, 0.2),
    "repeat_penalty": (1.0, 1.1, 1.3, 1.5),
}


@dataclass(frozen=True, slots=True)
class CompareColumn:
    """One column of a comparison: what it is called and how it samples.

    Attributes:
        label: A short name shown on the column ("TopK k=40 t=0.8", "temperature=1.2").
        settings: The sampler settings (their seed is replaced by the comparison's).
    """

    label: str
    settings: SamplerSettings


def columns_varying(
    base: SamplerSettings, field: str, values: Sequence[Any]
) -> list[SamplerSettings]:
    """`base` with one field changed, once per value: one column each.

    Args:
        base: The settings every column starts from (the current sliders).
        field: A `SamplerSettings` field name, e.g. "temperature".
        values: One value per column, e.g. (0.5, 0.8, 1.2, 1.5).

    Returns:
        One validated `SamplerSettings` per value, in order.

    Raises:
        SettingsError: `field` is not a setting (or is the seed), or a value is out of
            range; the message names the field and the value.
    """
    if field == "seed" or field not in {f.name for f in fields(SamplerSettings)}:
        raise SettingsError(field, values, f"a field to vary, one of {list(VARIABLE_FIELDS)}")
    return [base.with_changes(**{field: coerce_value(field, value)}) for value in values]


def coerce_value(field: str, value: Any) -> Any:
    """Turn a typed value (often a string from an Input) into the field's type.

    Raises:
        SettingsError: The value cannot be read as the field's type.
    """
    default = getattr(SamplerSettings(), field)
    if not isinstance(value, str):
        if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value
    text = value.strip()
    try:
        if isinstance(default, bool):
            lowered = text.lower()
            if lowered in ("true", "yes", "on", "1"):
                return True
            if lowered in ("false", "no", "off", "0"):
                return False
            raise ValueError(text)
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
    except ValueError:
        raise SettingsError(field, value, f"a value of type {type(default).__name__}") from None
    return text


def format_value(value: Any) -> str:
    """A setting's value, short: 0.8 not 0.80000, true/false for booleans."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def settings_summary(settings: SamplerSettings) -> str:
    """The settings in a few characters, only what is switched on (no seed).

    Examples: "greedy", "t=0.8 k=40 p=0.95 min_p=0.05", "t=1.5".
    """
    parts: list[str] = ["greedy" if settings.greedy else f"t={settings.temperature:g}"]
    if settings.top_k:
        parts.append(f"k={settings.top_k}")
    if settings.top_p < 1.0:
        scope = "(vocab)" if settings.top_p_scope == "vocab" else ""
        parts.append(f"p={settings.top_p:g}{scope}")
    if settings.min_p > 0.0:
        parts.append(f"min_p={settings.min_p:g}")
    if settings.penalizes:
        if settings.repeat_penalty != 1.0:
            parts.append(f"rep={settings.repeat_penalty:g}/{settings.repeat_last_n}")
        if settings.frequency_penalty:
            parts.append(f"freq={settings.frequency_penalty:g}")
        if settings.presence_penalty:
            parts.append(f"pres={settings.presence_penalty:g}")
    if settings.temperature_last and not settings.greedy:
        parts.append("t-last")
    if settings.draw != "inverse_cdf":
        parts.append(settings.draw)
    if settings.rng != "pcg64":
        parts.append(settings.rng)
    return " ".join(parts)


def preset_columns(
    presets: dict[str, SamplerSettings], names: Sequence[str]
) -> list[CompareColumn]:
    """Columns from named presets, in the order given.

    Raises:
        SettingsError: A name is not a preset.
    """
    columns = []
    for name in names:
        if name not in presets:
            raise SettingsError("preset", name, f"one of {sorted(presets)}")
        columns.append(CompareColumn(name, presets[name]))
    return columns


def varied_columns(base: SamplerSettings, field: str, values: Sequence[Any]) -> list[CompareColumn]:
    """`columns_varying` with a label per column ("temperature=1.2")."""
    settings = columns_varying(base, field, values)
    return [CompareColumn(f"{field}={format_value(getattr(s, field))}", s) for s in settings]


def check_column_count(count: int) -> None:
    """Raise a `SettingsError` unless a comparison has 2 to 4 columns."""
    if not MIN_COLUMNS <= count <= MAX_COLUMNS:
        raise SettingsError(
            "columns", count, f"between {MIN_COLUMNS} and {MAX_COLUMNS} columns to compare"
        )
