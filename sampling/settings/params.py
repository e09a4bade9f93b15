"""A unit's parameters: a frozen record whose fields carry their settings.

Each sampler unit declares its parameters as a frozen dataclass, one field per
setting, each made by `setting(spec)`: the field's name is the setting's, its default
the spec's, and the spec rides along in the field's metadata. The flag, the panel's
control, the compare key and the preset key all derive from that one declaration
(`specs_of` reads them back). The settings record (`sampling.settings.record`) holds
one such record per unit; a unit reads its own, typed (`SamplerSettings.of`).

A plugin declares its record the same way, or only its `specs`, from which
`record_of_specs` makes the record.
"""

from __future__ import annotations

from dataclasses import MISSING, field, fields, is_dataclass, make_dataclass
from typing import Any

from sampling.settings.spec import SettingSpec

_SPEC = "samplescope.setting"


def setting(spec: SettingSpec) -> Any:
    """A parameter record's field declared by its setting (named as the field)."""
    return field(default=spec.default, metadata={_SPEC: spec})


def specs_of(params: type[Any]) -> tuple[SettingSpec, ...]:
    """The settings a parameter record declares, in field order.

    Raises:
        TypeError: It is not a frozen dataclass, or a field is not made by `setting`
            (or is named otherwise than its setting, or defaults otherwise).
    """
    if not is_dataclass(params) or not params.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise TypeError(f"{params.__name__} must be a frozen dataclass")
    specs: list[SettingSpec] = []
    for declared in fields(params):
        spec = declared.metadata.get(_SPEC)
        if not isinstance(spec, SettingSpec):
            raise TypeError(f"{params.__name__}.{declared.name} must be declared by setting(spec)")
        if spec.name != declared.name or declared.default is MISSING:
            raise TypeError(f"{params.__name__}.{declared.name} declares the setting {spec.name}")
        specs.append(spec)
    return tuple(specs)


def declared_specs(params: type[Any]) -> tuple[SettingSpec, ...]:
    """The settings a record's fields carry, unchecked (to check them: `specs_of`)."""
    if not is_dataclass(params):
        return ()
    found = (declared.metadata.get(_SPEC) for declared in fields(params))
    return tuple(spec for spec in found if isinstance(spec, SettingSpec))


def record_of_specs(unit_name: str, specs: tuple[SettingSpec, ...]) -> type[Any]:
    """A parameter record made from settings alone (a plugin that declares only `specs`)."""
    return make_dataclass(
        f"{unit_name}_params",
        [(spec.name, Any, setting(spec)) for spec in specs],
        frozen=True,
    )
