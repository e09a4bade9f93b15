"""The registry: the sampler units in use, and every table derived from them.

A `Registry` is built at the front door (`tui.cli.main`, the app's tests, a test's
fixture) from the units given, the built-in ones (`sampling.built_in`) or fewer, and
the plugins loaded (`sampling.plugins`), and handed to what derives from it; a
settings record keeps the registry it was made with (`SamplerSettings.registry`).
From the units come the names an order may hold, the units that must lead it,
each unit's placement, the default orders (llama.cpp's chain with every unit it
lacks joined where its placement puts it), the settings in the order each declares
(`SettingSpec.rank`: the flags, forms, summary and presets follow it), the panel's
groups and their titles, and each unit's labels on the probability panel.

No registry is "in use": what derives from one is given it, or reads the one a
settings record was made with (`registry_of`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from sampling.settings.declared import is_switch
from sampling.settings.params import specs_of
from sampling.settings.placement import Placement, joined
from sampling.settings.record import DRAW_FIELDS, SamplerSettings
from sampling.settings.spec import MAX_SEED, SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.samplers.unit import SamplerUnit

DRAW_SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "draw",
        "choice",
        rank=110,
        default="inverse_cdf",
        off="inverse_cdf",
        label="draw",
        help="how a token is drawn",
        choices=(("inverse_cdf", "inverse cdf"), ("gumbel", "gumbel")),
    ),
    SettingSpec(
        "rng",
        "choice",
        rank=120,
        default="pcg64",
        off="pcg64",
        label="rng",
        help="random generator (xorshift128 reproduces run.c)",
        choices=(("pcg64", "pcg64"), ("xorshift128", "xorshift128")),
    ),
    SettingSpec(
        "seed",
        "int",
        rank=130,
        default=0,
        label="seed",
        help="random seed, 0 .. 2**64-1",
        minimum=0,
        maximum=MAX_SEED,
        slider=SliderRange(0, 99_999, hard_min=0, hard_max=MAX_SEED, fine=1, coarse=1000),
        short_flag="-s",
        per_column=False,
    ),
)
"""The draw's own settings: they belong to the sampler, not to a unit of the chain."""

LLAMA_CPP_ORDER: tuple[str, ...] = (
    "penalties",
    "dry",
    "top_n_sigma",
    "top_k",
    "typ_p",
    "top_p",
    "min_p",
    "xtc",
    "temperature",
)
"""llama.cpp's default chain (`common_params_sampling.samplers`), the temperature last."""

ORDER_HELP = 'the chain order, e.g. "top_k;temperature;min_p" (llama.cpp --samplers names)'

_FIXED_TITLES = {"core": "core", "order": "chain order"}


@dataclass(frozen=True, slots=True)
class PluginOrigin:
    """Where a plugin unit came from.

    Attributes:
        name: The unit's name.
        path: The file it was defined in.
        sha256: The file's SHA-256, in hex.
    """

    name: str
    path: str
    sha256: str


def groups_of(specs: Iterable[SettingSpec]) -> list[str]:
    """The panel's groups of some settings: the core, the others in turn, the order."""
    inner = dict.fromkeys(spec.group for spec in specs if spec.group not in ("core", "order"))
    return ["core", *inner, "order"]


def check_declarations(units: Iterable[type[SamplerUnit]]) -> None:
    """Fail unless each built-in unit declares, itself, where it runs, and has an
    on-rule: its own `is_on`, or switches among its settings (`UnitBase.is_on`).

    Raises:
        RuntimeError: Naming the unit that lacks its placement or an on-rule.
    """
    for unit in units:
        own = vars(unit)
        if not isinstance(own.get("placement"), Placement):
            raise RuntimeError(
                f"{unit.name} must declare its placement (sampling.settings.placement)"
            )
        if "is_on" not in own and not any(is_switch(spec) for spec in unit.specs):
            raise RuntimeError(f"{unit.name} has no switch among its settings: declare is_on")


def _check(units: tuple[type[SamplerUnit], ...]) -> None:
    """Fail if two units share a name or a setting, or titles disagree.

    Raises:
        RuntimeError: Naming the clash.
    """
    if len({unit.name for unit in units}) != len(units):
        raise RuntimeError(f"two sampler units share a name: {[u.name for u in units]}")
    seen = {spec.name: "the sampler" for spec in DRAW_SETTINGS}
    for unit in units:
        for spec in unit.specs:
            if spec.name in seen:
                raise RuntimeError(f"{unit.name} and {seen[spec.name]} both declare {spec.name}")
            seen[spec.name] = unit.name
    titles = dict(_FIXED_TITLES)
    for unit in units:
        for group, title in unit.group_titles.items():
            if titles.setdefault(group, title) != title:
                raise RuntimeError(f"{unit.name} titles group {group!r} otherwise: {title!r}")
    untitled = sorted(set(groups_of(spec for unit in units for spec in unit.specs)) - set(titles))
    if untitled:
        raise RuntimeError(f"panel groups without a title: {untitled}")
    if drawn := sorted(set(DRAW_FIELDS) - {spec.name for spec in DRAW_SETTINGS} - {"samplers"}):
        raise RuntimeError(f"the record holds settings the draw does not declare: {drawn}")


def _ranked(specs: Iterable[SettingSpec]) -> tuple[SettingSpec, ...]:
    """Settings in the order they declare (`SettingSpec.rank`), the unranked after in
    the order given."""
    listed = sorted(
        enumerate(specs),
        key=lambda item: (item[1].rank is None, item[1].rank or 0, item[0]),
    )
    return tuple(spec for _, spec in listed)


Params = TypeVar("Params")


@dataclass(frozen=True, slots=True)
class Registry:
    """The units in use, the built-in ones then the plugins, and the tables derived
    from them. Built by `build_registry`; never changed in place.

    Attributes:
        built_in: The units it was built from besides the plugins (every built-in unit,
            or fewer).
        plugins: The plugin units, in the order they were loaded.
        origins: Each plugin's origin (its file and the file's SHA-256), by name.
        units: Every unit, the built-in ones then the plugins.
        units_by_name: Every unit by its name.
        samplers: Every unit an order may name, by its name (llama.cpp's `--samplers`
            names; a plugin's own name).
        sampler_names: The names an order may hold, the built-in ones then the plugins'.
        logits_samplers: The samplers that rewrite the logits before their order is
            read: an order names them first.
        placements: Each unit's placement, by its name.
        labels: Each unit's name on the probability panel's bars.
        row_labels: Each unit's name on a candidate row it removed.
        group_titles: Each panel group's title.
        groups: The panel's groups: the core, the units' groups (the built-in ones as
            declared, then the plugins'), the order.
        chat_order: The order new chats and `generate` start from: llama.cpp's chain
            (`LLAMA_CPP_ORDER`), with every unit it lacks where its placement puts it
            once switched on. Without them (off by default), it runs as llama.cpp's.
        default_order: The order `SamplerSettings()` holds: llama.cpp's chain with the
            temperature before every filter (candle, Hugging Face), every unit it lacks
            joined as in `chat_order`, so presets that name no order mean what they
            always meant.
        settings: Every setting, the built-in ones in the order they declare (the
            flags, the summary and the forms follow it), the order's, then the
            plugins'.
        settings_by_name: Every setting by its name.
        plugin_settings: The plugins' settings by name.
        owners: The parameter record that holds each unit's setting, by its name.
        default_params: Each unit's parameter record at its defaults, by its type.
        display_order: How the panel and forms list the one-valued settings: the
            numbers, then the switches (the plugins' after the built-in ones of each).
    """

    built_in: tuple[type[SamplerUnit], ...]
    plugins: tuple[type[SamplerUnit], ...]
    origins: Mapping[str, PluginOrigin]
    units: tuple[type[SamplerUnit], ...]
    units_by_name: Mapping[str, type[SamplerUnit]]
    samplers: Mapping[str, type[SamplerUnit]]
    sampler_names: tuple[str, ...]
    logits_samplers: tuple[str, ...]
    placements: Mapping[str, Placement]
    labels: Mapping[str, str]
    row_labels: Mapping[str, str]
    group_titles: Mapping[str, str]
    groups: tuple[str, ...]
    chat_order: tuple[str, ...]
    default_order: tuple[str, ...]
    settings: tuple[SettingSpec, ...]
    settings_by_name: Mapping[str, SettingSpec]
    plugin_settings: Mapping[str, SettingSpec]
    owners: Mapping[str, type[Any]] = field(repr=False)
    default_params: Mapping[type[Any], Any] = field(repr=False)
    display_order: tuple[SettingSpec, ...] = field(repr=False)

    def defaults(self, params: type[Params]) -> Params:
        """A parameter record at its defaults (one no unit in use declares: built)."""
        record = self.default_params.get(params)
        return params() if record is None else record

    def is_on(self, name: str, settings: SamplerSettings) -> bool:
        """The on-rule of the unit `name` under `settings`."""
        return self.units_by_name[name].is_on(settings)

    def is_plugin(self, name: str) -> bool:
        """Whether the unit of this name is a plugin."""
        return name in self.origins

    @property
    def built_in_settings(self) -> tuple[SettingSpec, ...]:
        """The settings of the built-in units and the draw, in their order."""
        return tuple(spec for spec in self.settings if spec.name not in self.plugin_settings)

    @property
    def cut_names(self) -> tuple[str, ...]:
        """Every name `Step.cut_by` and `CandidateTable.removed_by` may hold ("" aside):
        "none" when nothing was cut, "greedy" at temperature 0, "logit_bias" or
        "min_tokens" for a ban (-inf), "grammar" for a token the grammar forbids,
        "temperature" for a token whose probability underflowed to 0 at a low
        temperature (or a dynamic temperature of 0), "smoothing" for one that
        underflowed once smoothing reshaped the logits, and otherwise the unit that
        removed it."""
        outside = [unit for unit in self.units if not unit.placement.in_order]
        return (
            "none",
            "greedy",
            *(unit.name for unit in outside if unit.kind == "logits"),
            *self.sampler_names,
            *(unit.name for unit in outside if unit.kind != "logits"),
        )

    def find_setting(self, key: str) -> SettingSpec | None:
        """The setting a key names: a short key ("t"), a name, or one with dashes."""
        for spec in self.settings:
            if key == spec.short_key:
                return spec
        return self.settings_by_name.get(key.replace("-", "_"))

    def with_plugin(self, unit: type[SamplerUnit], origin: PluginOrigin) -> Registry:
        """This registry with one more plugin (checked by `sampling.plugins`)."""
        plugins = (*self.plugins, unit)
        return build_registry(self.built_in, plugins, {**self.origins, unit.name: origin})

    def without(self, name: str) -> Registry:
        """This registry without the plugin `name` (itself for a name it lacks)."""
        if name not in self.origins:
            return self
        plugins = tuple(unit for unit in self.plugins if unit.name != name)
        origins = {key: origin for key, origin in self.origins.items() if key != name}
        return build_registry(self.built_in, plugins, origins)


def build_registry(
    units: tuple[type[SamplerUnit], ...],
    plugins: tuple[type[SamplerUnit], ...] = (),
    origins: Mapping[str, PluginOrigin] | None = None,
) -> Registry:
    """The registry of `units` (the built-in ones, or fewer) and `plugins` (checked
    by `sampling.plugins`), with each plugin's origin.

    Where each unit runs is its own `placement`; the order of `units` only decides
    the order in which units joining an order at one place join it (the cutoffs
    before min-p, in text-generation-webui's order).

    Raises:
        RuntimeError: Two units share a name or a setting, a unit lacks its placement
            or on-rule, or a panel group has no title.
    """
    _check((*units, *plugins))
    check_declarations(units)
    every = (*units, *plugins)
    samplers = {unit.name: unit for unit in every if unit.placement.in_order}
    built_in_samplers = tuple(unit for unit in units if unit.placement.in_order)
    built_in_logits = tuple(unit.name for unit in built_in_samplers if unit.kind == "logits")
    logits = tuple(name for name, unit in samplers.items() if unit.kind == "logits")
    joining = tuple((unit.name, unit.placement) for unit in units if unit.placement.joins)
    llama_cpp = tuple(name for name in LLAMA_CPP_ORDER if name in samplers)
    chat_order = joined(llama_cpp, joining)
    default_order = joined(
        (
            *built_in_logits,
            *(name for name in ("temperature",) if name in samplers),
            *(name for name in llama_cpp if name not in (*built_in_logits, "temperature")),
        ),
        joining,
    )
    order = SettingSpec(
        "samplers",
        "order",
        default=default_order,
        group="order",
        label="order",
        help=ORDER_HELP,
        choices=tuple((unit.name, unit.label) for unit in samplers.values()),
        leading=logits,
    )
    declared = (*(spec for unit in units for spec in unit.specs), *DRAW_SETTINGS)
    plugin_specs = tuple(spec for unit in plugins for spec in specs_of(unit.params))
    settings = (*_ranked(declared), order, *plugin_specs)
    titles = dict(_FIXED_TITLES)
    for unit in every:
        titles.update(unit.group_titles)
    return Registry(
        built_in=units,
        plugins=plugins,
        origins=dict(origins or {}),
        units=every,
        units_by_name={unit.name: unit for unit in every},
        samplers=samplers,
        sampler_names=tuple(samplers),
        logits_samplers=logits,
        placements={unit.name: unit.placement for unit in every},
        labels={unit.name: unit.label for unit in every},
        row_labels={unit.name: unit.row_label for unit in every},
        group_titles=titles,
        groups=tuple(groups_of((*declared, *plugin_specs))),
        chat_order=chat_order,
        default_order=default_order,
        settings=settings,
        settings_by_name={spec.name: spec for spec in settings},
        plugin_settings={spec.name: spec for spec in plugin_specs},
        owners={spec.name: unit.params for unit in every for spec in specs_of(unit.params)},
        default_params={unit.params: unit.params() for unit in every},
        display_order=(
            *(spec for spec in settings if spec.is_number),
            *(spec for spec in settings if spec.is_scalar and not spec.is_number),
        ),
    )


def registry_of(settings: SamplerSettings) -> Registry:
    """The registry a settings record was made with."""
    return registry_of_record(settings.registry)


def registry_of_record(held: object) -> Registry:
    """`held` as the `Registry` it is.

    Raises:
        TypeError: It is not one.
    """
    if not isinstance(held, Registry):
        raise TypeError(f"a settings record holds a registry, not {type(held).__name__}")
    return held
