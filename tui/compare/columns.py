"""Where the compare view's columns come from: presets, or one setting varied.

Pure helpers (no widgets), so the command palette, the edit form and the tests
share them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry, registry_of
from sampling.settings.spec import SettingValue

# The one settings summary, re-exported for the compare view's widgets.
from sampling.settings.summary import settings_summary as settings_summary

MIN_COLUMNS = 2
MAX_COLUMNS = 4


@dataclass(frozen=True, slots=True)
class CompareFields:
    """What a column may vary, as a registry says (a plugin's settings too).

    Attributes:
        variable: The one-valued fields a column may vary (every one but the seed,
            which the columns share), in display order.
        editable: Every field a column may vary, in the order the edit form offers
            them: the one-valued ones, then the chain's order, logit biases and DRY's
            breakers (typed as their text form).
        variations: The values "Compare: vary <field>" in the command palette offers.
    """

    variable: tuple[str, ...]
    editable: tuple[str, ...]
    variations: Mapping[str, tuple[SettingValue, ...]]


def _fields_of(tables: Registry) -> CompareFields:
    """The compare fields a registry's settings give."""
    variable = tuple(spec.name for spec in tables.display_order if spec.per_column)
    several = tuple(spec.name for spec in tables.settings if not spec.is_scalar and spec.per_column)
    return CompareFields(
        variable=variable,
        editable=variable + several,
        variations=MappingProxyType(
            {spec.name: spec.variations for spec in tables.settings if spec.variations}
        ),
    )


_DERIVED: list[tuple[Registry, CompareFields]] = []
"""The registry last asked about and its fields (a new one is installed whenever a
plugin loads or goes, so its identity says whether they still hold)."""


def compare_fields(tables: Registry = BUILT_IN_REGISTRY) -> CompareFields:
    """The compare fields of a registry (the app's), derived once per registry."""
    if not _DERIVED or _DERIVED[0][0] is not tables:
        _DERIVED[:] = [(tables, _fields_of(tables))]
    return _DERIVED[0][1]


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
    registry = registry_of(base)
    spec = registry.settings_by_name.get(field)
    if spec is None or not spec.per_column:
        raise SettingsError(
            field, values, f"a field to vary, one of {list(compare_fields(registry).editable)}"
        )
    return [base.with_changes(**{field: coerce_value(field, value, registry)}) for value in values]


def coerce_value(field: str, value: Any, registry: Registry = BUILT_IN_REGISTRY) -> Any:
    """Turn a typed value (often a string from an Input) into the field's type.

    Raises:
        SettingsError: `field` is not a setting, or the value cannot be read as its type.
    """
    spec = registry.settings_by_name.get(field)
    if spec is None:
        raise SettingsError(field, value, f"a setting, one of {list(registry.settings_by_name)}")
    return spec.coerce(value)


def format_value(
    value: Any, field: str | None = None, registry: Registry = BUILT_IN_REGISTRY
) -> str:
    """A setting's value, short: 0.8 not 0.80000, true/false for booleans, the text
    form of a several-valued one ("top_k;min_p", "42=+2") that `coerce_value` reads back.

    Args:
        value: The value.
        field: The field it belongs to, when known (an empty tuple fits several).
        registry: The settings it may belong to.
    """
    spec = registry.settings_by_name.get(field) if field is not None else None
    if spec is not None and not spec.is_scalar:
        return spec.format(value)
    if isinstance(value, tuple):
        return _tuple_text(value, registry)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


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
    registry = registry_of(base)
    return [
        CompareColumn(f"{field}={format_value(getattr(s, field), field, registry)}", s)
        for s in settings
    ]


def check_column_count(count: int) -> None:
    """Raise a `SettingsError` unless a comparison has 2 to 4 columns."""
    if not MIN_COLUMNS <= count <= MAX_COLUMNS:
        raise SettingsError(
            "columns", count, f"between {MIN_COLUMNS} and {MAX_COLUMNS} columns to compare"
        )


def _tuple_text(value: tuple[Any, ...], registry: Registry) -> str:
    """A several-valued setting's text, as its spec writes it (read back by `coerce_value`)."""
    for spec in registry.settings:
        if not spec.is_scalar and spec.accepts(value):
            return spec.format(value)
    return str(value)
