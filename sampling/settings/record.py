"""The sampler's settings: the order, the draw and each unit's parameters.

A `SamplerSettings` holds the chain's order (`samplers`), the draw's own settings
(`draw`, `rng`, `seed`) and each unit's parameter record (`sampling.settings.params`): a
unit reads its own, typed (`of`). Flags, TOML, presets and the store read and write
the settings flat, by name (`value`, `with_changes`, `to_dict`, `from_dict`, and
`SamplerSettings(top_k=40)`), which the registry maps to the record that holds each.

A record keeps the registry it was made with (`registry`; `sampling.settings.registry`)
and reads everything of it there: its settings and which record holds each, the
units' placements and on-rules, the default order. A record made without one takes
the built-in units' registry (`built_in_registry`); a front door that loads plugins
makes its records with its own. The record reads its registry as a `Catalogue`, the
part of `Registry` it needs: the registry lists the units and each unit reads the
record (`from_settings`), so the record's module cannot name the registry's class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from sampling.errors import SettingsError
from sampling.settings.placement import Placement, placed_order, temperature_moved_last
from sampling.settings.spec import GREEDY_TEMPERATURE, SettingSpec, SettingValue
from sampling.settings.text import json_bias

DrawMethod = Literal["inverse_cdf", "gumbel"]
RngName = Literal["pcg64", "xorshift128"]

Params = TypeVar("Params")

DRAW_FIELDS = ("draw", "rng", "seed", "samplers")
"""The settings the record holds itself: the draw's and the order."""


class Catalogue(Protocol):
    """What the record reads of its registry (`sampling.settings.registry.Registry`)."""

    @property
    def units(self) -> tuple[type[Any], ...]:
        """Every unit, the built-in ones then the plugins' (each gives its summary)."""
        ...

    @property
    def settings(self) -> tuple[SettingSpec, ...]:
        """Every setting: the built-in ones, then the plugins'."""
        ...

    @property
    def settings_by_name(self) -> Mapping[str, SettingSpec]:
        """Every setting by its name."""
        ...

    @property
    def plugin_settings(self) -> Mapping[str, SettingSpec]:
        """The plugins' settings by name."""
        ...

    @property
    def owners(self) -> Mapping[str, type[Any]]:
        """The parameter record that holds each unit's setting, by the setting's name."""
        ...

    @property
    def placements(self) -> Mapping[str, Placement]:
        """Each unit's placement by its name."""
        ...

    @property
    def default_order(self) -> tuple[str, ...]:
        """The order `SamplerSettings()` holds."""
        ...

    @property
    def chat_order(self) -> tuple[str, ...]:
        """llama.cpp's chain with the units it lacks placed (the chat's order)."""
        ...

    def defaults(self, params: type[Params]) -> Params:
        """A parameter record at its defaults."""
        ...

    def is_on(self, name: str, settings: SamplerSettings) -> bool:
        """The on-rule of the unit `name` (`SamplerUnit.is_on`)."""
        ...


_BUILT_IN: list[Catalogue] = []


def provide_built_in_registry(registry: Catalogue) -> None:
    """Give the registry of the built-in units, the one a record made without a
    registry takes: `sampling.built_in` gives it once, when it builds it (this module
    cannot import the units, which read the record).

    Raises:
        RuntimeError: Another registry was given before.
    """
    if _BUILT_IN and _BUILT_IN[0] is not registry:
        raise RuntimeError("the built-in registry is given once, by sampling.built_in")
    _BUILT_IN[:] = [registry]


def built_in_registry() -> Catalogue:
    """The registry of the built-in units: what a record made without one takes.

    Raises:
        RuntimeError: `sampling.built_in` was not imported (importing `sampling` does).
    """
    if not _BUILT_IN:
        raise RuntimeError("no built-in sampler registry: import sampling")
    return _BUILT_IN[0]


class SamplerSettings:
    """Every knob of the sampler, validated on construction against its declared spec.

    Built flat, by the settings' names: `SamplerSettings(temperature=0.7, top_k=40)`;
    a setting not given takes its default. The registry it is made with comes first
    (`SamplerSettings(registry, top_k=40)`), else the built-in units' registry; it keeps it.
    The defaults are the "off" values: `SamplerSettings()` samples the model's own
    distribution at temperature 1. The app's starting point (llama.cpp's defaults) is
    `chat_defaults(registry)` (`sampling.built_in`). Several-valued settings take
    their natural spellings too (`samplers="top_k;temperature"`, `logit_bias={42: 2.0}`
    or "42=+2;17=-inf", lists for tuples).

    Attributes:
        samplers: The chain's order, exactly as it runs (llama.cpp's `--samplers`
            names); a name left out does not run. Only `temperature_last` moves
            anything (see `order`). Switching on a sampler llama.cpp's default chain
            lacks adds its name where its placement says when the order lacks it,
            and an order a unit's placement forbids is refused
            (`sampling.settings.placement.placed_order`).
        draw: "inverse_cdf" (one uniform per token) or seeded "gumbel" max.
        rng: "pcg64" (numpy) or "xorshift128" (run.c's generator, id-order roulette).
        seed: The generator's seed, 0 to 2**64 - 1.
        params: Each unit's parameter record that differs from its defaults, by its
            type (`of` reads any unit's, defaults included).
        registry: The registry it was made with (`sampling.settings.registry`): its
            settings are the ones it holds, its units the ones its chain runs.
    """

    __slots__ = ("draw", "params", "registry", "rng", "samplers", "seed")

    samplers: tuple[str, ...]
    draw: DrawMethod
    rng: RngName
    seed: int
    params: Mapping[type[Any], Any]
    registry: Catalogue

    def __init__(self, registry: Catalogue | None = None, /, **values: Any) -> None:
        catalogue = built_in_registry() if registry is None else registry
        object.__setattr__(self, "registry", catalogue)
        object.__setattr__(self, "samplers", catalogue.default_order)
        object.__setattr__(self, "draw", "inverse_cdf")
        object.__setattr__(self, "rng", "pcg64")
        object.__setattr__(self, "seed", 0)
        object.__setattr__(self, "params", MappingProxyType({}))
        self._change(catalogue, values)

    def _change(self, catalogue: Catalogue, changes: Mapping[str, Any]) -> None:
        """Take `changes` (by setting name), each checked, then place the order."""
        grouped: dict[type[Any], dict[str, Any]] = {}
        known = catalogue.settings_by_name
        for name, given in changes.items():
            spec = known.get(name)
            if spec is None:
                raise SettingsError(
                    name, given, "a setting samplescope or a loaded sampler plugin declares"
                )
            value = _checked(spec, given)
            if name in DRAW_FIELDS:
                object.__setattr__(self, name, value)
            else:
                grouped.setdefault(catalogue.owners[name], {})[name] = value
        if grouped:
            params = dict(self.params)
            for owner, record_changes in grouped.items():
                record = replace(params.get(owner) or catalogue.defaults(owner), **record_changes)
                if record == catalogue.defaults(owner):
                    params.pop(owner, None)
                else:
                    params[owner] = record
            object.__setattr__(self, "params", MappingProxyType(params))
        order = placed_order(self.samplers, catalogue.placements, self._switches_on)
        if order != self.samplers:
            object.__setattr__(self, "samplers", order)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"SamplerSettings is frozen: use with_changes({name}=...)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("SamplerSettings is frozen")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SamplerSettings):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[object, ...]:
        """What equal settings share: the order, the draw, and every value a unit's record
        holds away from its defaults, by the setting's name (a plugin loaded again from
        its file holds a record of another type, alike)."""
        held = sorted(
            (declared.name, getattr(record, declared.name))
            for record in self.params.values()
            for declared in fields(record)
        )
        return (self.samplers, self.draw, self.rng, self.seed, tuple(held))

    def __repr__(self) -> str:
        changed = ", ".join(f"{name}={value!r}" for name, value in self._changed())
        return f"SamplerSettings({changed})"

    def __copy__(self) -> SamplerSettings:
        return self  # frozen: a copy keeps the registry it was made with

    def __deepcopy__(self, memo: dict[int, object]) -> SamplerSettings:
        return self

    def __reduce__(self) -> tuple[Callable[..., SamplerSettings], tuple[dict[str, Any]]]:
        return (_rebuilt, (self.to_dict(),))

    def _changed(self) -> Iterator[tuple[str, Any]]:
        """The settings that differ from their defaults, in the registry's order."""
        catalogue = self.registry
        for name, value in self._flat(catalogue):
            if value != catalogue.settings_by_name[name].default:
                yield name, value

    def _switches_on(self, name: str) -> bool:
        """The on-rule of the unit `name` (`SamplerUnit.is_on`)."""
        return self.registry.is_on(name, self)

    def of(self, params: type[Params]) -> Params:
        """A unit's parameter record (its defaults unless the settings change them)."""
        record = self.params.get(params)
        return record if record is not None else self.registry.defaults(params)

    def value(self, name: str) -> SettingValue:
        """Any setting's value by its name (the draw's, the order, or a unit's).

        Raises:
            AttributeError: No setting has that name.
        """
        if name in DRAW_FIELDS:
            own: SettingValue = getattr(self, name)
            return own
        owner = self.registry.owners.get(name)
        if owner is None:
            raise AttributeError(f"SamplerSettings has no setting {name!r}")
        held: SettingValue = getattr(self.of(owner), name)
        return held

    if not TYPE_CHECKING:  # the type checker sees the typed reads alone (`of`)

        def __getattr__(self, name: str) -> SettingValue:
            """A unit's setting by its name, as `value` (the flat view)."""
            if name.startswith("_") or name in SamplerSettings.__slots__:
                raise AttributeError(name)
            return self.value(name)

    @property
    def greedy(self) -> bool:
        """Whether the temperature is low enough to mean argmax."""
        temperature = self.value("temperature")
        return isinstance(temperature, float | int) and temperature < GREEDY_TEMPERATURE

    def with_changes(self, **changes: Any) -> SamplerSettings:
        """Return a validated copy with some settings changed (by their names)."""
        changed = object.__new__(SamplerSettings)
        for name in SamplerSettings.__slots__:
            object.__setattr__(changed, name, getattr(self, name))
        changed._change(self.registry, changes)
        return changed

    def _flat(self, catalogue: Catalogue) -> Iterator[tuple[str, Any]]:
        """Every setting's value by name, in the registry's order, then any value of a
        plugin no longer loaded."""
        plugins = catalogue.plugin_settings
        for spec in catalogue.settings:
            value = self.value(spec.name)
            if spec.name not in plugins or value != spec.default:
                yield spec.name, value
        for record in self.params.values():
            for held in fields(record):
                if held.name not in catalogue.settings_by_name:
                    yield held.name, getattr(record, held.name)

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (JSON/TOML friendly), by name: every built-in
        one, and the plugins' that are not at their default."""
        return dict(self._flat(self.registry))

    def to_json(self) -> dict[str, Any]:
        """`to_dict` as strict JSON can hold it (JSON has no infinity): a banning -inf
        logit bias is the string "-inf", which `from_dict` reads back."""
        catalogue = self.registry.settings_by_name
        return {
            name: json_bias(value)
            if name in catalogue and catalogue[name].kind == "bias"
            else value
            for name, value in self.to_dict().items()
        }

    @property
    def order(self) -> tuple[str, ...]:
        """The order the chain runs: `samplers` as given, with "temperature" moved last
        when `temperature_last` is on (with smoothing when named right after it, and
        ahead of adaptive-p ending the order: `temperature_moved_last`).

        Nothing else is read: the order never depends on which other names
        samplescope knows, so a stored reply replays in the order it ran.
        """
        samplers = self.samplers
        if not self.value("temperature_last") or "temperature" not in samplers:
            return samplers
        return temperature_moved_last(samplers, self.registry.placements)

    def made_with(self, registry: Catalogue) -> SamplerSettings:
        """The same settings made with another registry (one with more plugins).

        Raises:
            SettingsError: `registry` lacks a setting these hold away from its default.
        """
        if registry is self.registry:
            return self
        values = {**dict(self._changed()), "samplers": self.samplers}
        return SamplerSettings(registry, **values)

    @classmethod
    def from_dict(
        cls, values: Mapping[str, Any], registry: Catalogue | None = None
    ) -> SamplerSettings:
        """Build settings from a dict (JSON or TOML), rejecting unknown keys by name.

        Lists become the tuples the several-valued settings hold; a missing setting
        takes its default (which switches every newer sampler off). They are made
        with `registry`, else the built-in units' registry.
        """
        catalogue = built_in_registry() if registry is None else registry
        specs = catalogue.settings_by_name
        unknown = sorted(set(values) - set(specs))
        if unknown:
            raise SettingsError(unknown[0], values[unknown[0]], f"one of {sorted(specs)}")
        return cls(catalogue, **values)


def _rebuilt(values: dict[str, Any]) -> SamplerSettings:
    """A record rebuilt from its flat form (unpickling)."""
    return SamplerSettings(**values)


def _checked(spec: SettingSpec, given: Any) -> Any:
    """`given` as the setting holds it, checked against its spec.

    Raises:
        SettingsError: Naming the setting and what it expects.
    """
    value = given
    if not spec.is_scalar and not spec.accepts(given):
        value = spec.coerce(given)
    try:
        accepted = spec.accepts(value)
    except OverflowError:  # an integer too large for a float (10**400 as a temperature)
        accepted = False
    if not accepted:
        raise SettingsError(spec.name, given, spec.expected)
    return value
