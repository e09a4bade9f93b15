"""The registry: the one list of sampler units, and everything derived from it.

`UNITS` lists every built-in unit (`sampling.samplers`); the default orders
(llama.cpp's chain with every unit it lacks joined where its placement puts it) and
every declared setting (`DECLARED_SETTINGS`: the units' own and the draw's) come
from it. A `Registry` is built once from the built-in units and the plugins loaded
(`sampling.plugins`): the names an order may hold, the units that must lead it, each
unit's placement, the settings in their order (which the flags, forms, summary
and presets follow), the panel's groups and their titles, and each unit's labels on the
probability panel. `registry()` is the one in use; loading or dropping a plugin
installs a new one, so that every table agrees by construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from sampling.params import specs_of
from sampling.placement import Placement, joined
from sampling.samplers.adaptive_p import AdaptiveP
from sampling.samplers.contrast import Contrast
from sampling.samplers.dry import Dry
from sampling.samplers.epsilon_cutoff import EpsilonCutoff
from sampling.samplers.eta_cutoff import EtaCutoff
from sampling.samplers.grammar import Grammar
from sampling.samplers.guidance import Guidance
from sampling.samplers.logit_bias import LogitBias
from sampling.samplers.min_p import MinP
from sampling.samplers.min_tokens import MinTokens
from sampling.samplers.mirostat import Mirostat
from sampling.samplers.p_less import PLess
from sampling.samplers.penalties import Penalties
from sampling.samplers.smoothing import Smoothing
from sampling.samplers.tail_free import TailFree
from sampling.samplers.temperature import Temperature
from sampling.samplers.top_a import TopA
from sampling.samplers.top_k import TopK
from sampling.samplers.top_n_sigma import TopNSigma
from sampling.samplers.top_p import TopP
from sampling.samplers.typical import Typical
from sampling.samplers.unit import SamplerUnit
from sampling.samplers.xtc import Xtc
from sampling.setting_spec import MAX_SEED, SettingSpec, SliderRange
from sampling.settings_record import DRAW_FIELDS, SamplerSettings

UNITS: tuple[type[SamplerUnit], ...] = (
    Penalties,
    Dry,
    TopNSigma,
    TopK,
    Typical,
    TopP,
    EpsilonCutoff,
    EtaCutoff,
    TailFree,
    TopA,
    PLess,
    MinP,
    Xtc,
    Temperature,
    Smoothing,
    AdaptiveP,
    Mirostat,
    Guidance,
    Contrast,
    LogitBias,
    MinTokens,
    Grammar,
)
"""Every built-in unit. Where each runs is its own `placement`; the registry's order
only decides the order in which units joining an order at one place join it (the
cutoffs before min-p, in text-generation-webui's order)."""

_BUILT_IN_SAMPLERS = tuple(unit for unit in UNITS if unit.placement.in_order)
_BUILT_IN_NAMES = tuple(unit.name for unit in _BUILT_IN_SAMPLERS)
_BUILT_IN_LOGITS = tuple(unit.name for unit in _BUILT_IN_SAMPLERS if unit.kind == "logits")

CUT_NAMES: tuple[str, ...] = (
    "none",
    "greedy",
    *(unit.name for unit in UNITS if not unit.placement.in_order and unit.kind == "logits"),
    *_BUILT_IN_NAMES,
    *(unit.name for unit in UNITS if not unit.placement.in_order and unit.kind != "logits"),
)
"""Every name `Step.cut_by` and `CandidateTable.removed_by` may hold ("" aside): "none"
when nothing was cut, "greedy" at temperature 0, "logit_bias" or "min_tokens" for a
ban (-inf), "grammar" for a token the grammar forbids, "temperature" for a token whose
probability underflowed to 0 at a low temperature (or a dynamic temperature of 0),
"smoothing" for one that underflowed once smoothing reshaped the logits, and
otherwise the unit that removed it."""

DRAW_SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "draw",
        "choice",
        default="inverse_cdf",
        off="inverse_cdf",
        label="draw",
        help="how a token is drawn",
        choices=(("inverse_cdf", "inverse cdf"), ("gumbel", "gumbel")),
    ),
    SettingSpec(
        "rng",
        "choice",
        default="pcg64",
        off="pcg64",
        label="rng",
        help="random generator (xorshift128 reproduces run.c)",
        choices=(("pcg64", "pcg64"), ("xorshift128", "xorshift128")),
    ),
    SettingSpec(
        "seed",
        "int",
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

_JOINING = tuple((unit.name, unit.placement) for unit in UNITS if unit.placement.joins)

CHAT_ORDER: tuple[str, ...] = joined(LLAMA_CPP_ORDER, _JOINING)
"""The order new chats and `generate` start from (`DEFAULT_CHAT_SETTINGS`): llama.cpp's
chain, with every unit it lacks where its placement puts it once switched on. Without
them (off by default), it runs as `LLAMA_CPP_ORDER`."""

TEMPERATURE_FIRST_ORDER: tuple[str, ...] = joined(
    (
        *_BUILT_IN_LOGITS,
        "temperature",
        *(name for name in LLAMA_CPP_ORDER if name not in (*_BUILT_IN_LOGITS, "temperature")),
    ),
    _JOINING,
)
"""The order `SamplerSettings()` runs: llama.cpp's chain with the temperature before
every filter (candle, Hugging Face), every unit it lacks joined as in `CHAT_ORDER`, so
presets that name no order mean what they always meant."""

ORDER_SETTING = SettingSpec(
    "samplers",
    "order",
    default=TEMPERATURE_FIRST_ORDER,
    group="order",
    label="order",
    help='the chain order, e.g. "top_k;temperature;min_p" (llama.cpp --samplers names)',
    choices=tuple((unit.name, unit.label) for unit in _BUILT_IN_SAMPLERS),
    leading=_BUILT_IN_LOGITS,
)
"""The chain's order among the built-in units (a registry with plugins extends it)."""

DECLARED_SETTINGS: tuple[SettingSpec, ...] = (
    *(spec for unit in UNITS for spec in unit.specs),
    *DRAW_SETTINGS,
    ORDER_SETTING,
)
"""Every setting the units and the draw declare (`SamplerSettings` orders them)."""

_FIXED_TITLES = {"core": "core", "order": "chain order"}


def groups_of(specs: Iterable[SettingSpec]) -> list[str]:
    """The panel's groups of some settings: the core, the others in turn, the order."""
    inner = dict.fromkeys(spec.group for spec in specs if spec.group not in ("core", "order"))
    return ["core", *inner, "order"]


def check_declarations(units: tuple[type[SamplerUnit], ...]) -> None:
    """Fail unless each built-in unit declares, itself, where it runs and its on-rule.

    Raises:
        RuntimeError: Naming the unit that lacks its placement or its `is_on`.
    """
    for unit in units:
        own = vars(unit)
        if not isinstance(own.get("placement"), Placement):
            raise RuntimeError(f"{unit.name} must declare its placement (sampling.placement)")
        if "is_on" not in own:
            raise RuntimeError(f"{unit.name} must declare is_on, its on-rule")


def _check_registry() -> None:
    """Fail at import if two units share a name or a setting, or titles disagree.

    Raises:
        RuntimeError: Naming the clash.
    """
    if len({unit.name for unit in UNITS}) != len(UNITS):
        raise RuntimeError(f"two sampler units share a name: {[u.name for u in UNITS]}")
    seen: dict[str, str] = {}
    for unit in UNITS:
        for spec in unit.specs:
            if spec.name in seen:
                raise RuntimeError(f"{unit.name} and {seen[spec.name]} both declare {spec.name}")
            seen[spec.name] = unit.name
    titles = dict(_FIXED_TITLES)
    for unit in UNITS:
        for group, title in unit.group_titles.items():
            if titles.setdefault(group, title) != title:
                raise RuntimeError(f"{unit.name} titles group {group!r} otherwise: {title!r}")
    untitled = sorted(set(groups_of(DECLARED_SETTINGS)) - set(titles))
    if untitled:
        raise RuntimeError(f"panel groups without a title: {untitled}")
    check_declarations(UNITS)
    declared = {spec.name for spec in DECLARED_SETTINGS}
    if unknown := sorted(set(SETTINGS_ORDER) - declared):
        raise RuntimeError(f"SETTINGS_ORDER names settings no unit declares: {unknown}")
    if drawn := sorted(set(DRAW_FIELDS) - {spec.name for spec in DRAW_SETTINGS} - {"samplers"}):
        raise RuntimeError(f"the record holds settings the draw does not declare: {drawn}")
    for order in (CHAT_ORDER, TEMPERATURE_FIRST_ORDER):
        if sorted(order) != sorted(_BUILT_IN_NAMES):
            raise RuntimeError(f"a default order lacks a unit placed in the order: {order}")


SETTINGS_ORDER: tuple[str, ...] = (
    "temperature",
    "top_k",
    "top_p",
    "top_p_scope",
    "min_p",
    "repeat_penalty",
    "repeat_last_n",
    "frequency_penalty",
    "presence_penalty",
    "temperature_last",
    "draw",
    "rng",
    "seed",
    "typical_p",
    "top_n_sigma",
    "xtc_probability",
    "xtc_threshold",
    "dry_multiplier",
    "dry_base",
    "dry_allowed_length",
    "dry_penalty_last_n",
    "dry_sequence_breakers",
    "mirostat",
    "mirostat_tau",
    "mirostat_eta",
    "dynatemp_range",
    "dynatemp_exponent",
    "top_a",
    "tfs",
    "epsilon_cutoff",
    "eta_cutoff",
    "smoothing_factor",
    "smoothing_curve",
    "adaptive_target",
    "adaptive_decay",
    "min_tokens",
    "logit_bias",
    "grammar",
    "json_schema",
    "grammar_triggers",
)
"""How flags, the summary, the forms and `to_dict` list the settings the units had
when it was written (the core knobs first, the newer after). The settings of a
unit added since follow these in registry order, then the order's; a plugin's come
last."""

Params = TypeVar("Params")


@dataclass(frozen=True, slots=True)
class Registry:
    """Every unit in use, the built-in ones then the plugins, and the tables derived
    from them. Built once (`build_registry`); never changed in place.

    Attributes:
        units: Every unit, the built-in ones (`UNITS`) then the plugins.
        plugins: The plugin units, in the order they were loaded.
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
        settings: Every setting, the built-in ones in the record's order (the flags,
            the summary and the forms follow it), then the plugins'.
        settings_by_name: Every setting by its name.
        plugin_settings: The plugins' settings by name.
        owners: The parameter record that holds each unit's setting, by its name.
        default_params: Each unit's parameter record at its defaults, by its type.
        display_order: How the panel and forms list the one-valued settings: the
            numbers, then the switches (the plugins' after the built-in ones of each).
    """

    units: tuple[type[SamplerUnit], ...]
    plugins: tuple[type[SamplerUnit], ...]
    units_by_name: Mapping[str, type[SamplerUnit]]
    samplers: Mapping[str, type[SamplerUnit]]
    sampler_names: tuple[str, ...]
    logits_samplers: tuple[str, ...]
    placements: Mapping[str, Placement]
    labels: Mapping[str, str]
    row_labels: Mapping[str, str]
    group_titles: Mapping[str, str]
    groups: tuple[str, ...]
    settings: tuple[SettingSpec, ...]
    settings_by_name: Mapping[str, SettingSpec]
    plugin_settings: Mapping[str, SettingSpec]
    owners: Mapping[str, type[Any]]
    default_params: Mapping[type[Any], Any]
    display_order: tuple[SettingSpec, ...]

    @property
    def default_order(self) -> tuple[str, ...]:
        """The order `SamplerSettings()` holds."""
        return TEMPERATURE_FIRST_ORDER

    def defaults(self, params: type[Params]) -> Params:
        """A parameter record at its defaults (one no unit in use declares: built)."""
        record = self.default_params.get(params)
        return params() if record is None else record

    def is_on(self, name: str, settings: SamplerSettings) -> bool:
        """The on-rule of the unit `name` under `settings`."""
        return self.units_by_name[name].is_on(settings)

    @property
    def built_in_settings(self) -> tuple[SettingSpec, ...]:
        """The settings of the built-in units and the draw, in their order."""
        return tuple(spec for spec in self.settings if spec.name not in self.plugin_settings)

    def find_setting(self, key: str) -> SettingSpec | None:
        """The setting a key names: a short key ("t"), a name, or one with dashes."""
        for spec in self.settings:
            if key == spec.short_key:
                return spec
        return self.settings_by_name.get(key.replace("-", "_"))


def build_registry(plugins: tuple[type[SamplerUnit], ...] = ()) -> Registry:
    """The registry of the built-in units and `plugins` (checked by `sampling.plugins`)."""
    units = (*UNITS, *plugins)
    samplers = {unit.name: unit for unit in units if unit.placement.in_order}
    logits = tuple(name for name, unit in samplers.items() if unit.kind == "logits")
    order = replace(
        ORDER_SETTING,
        choices=(*ORDER_SETTING.choices, *((unit.name, unit.label) for unit in plugins)),
        leading=logits,
    )
    declared = {spec.name: spec for spec in DECLARED_SETTINGS if spec.name != "samplers"}
    built_in = (
        *(declared[name] for name in SETTINGS_ORDER),
        *(spec for name, spec in declared.items() if name not in SETTINGS_ORDER),
        order,
    )
    plugin_specs = tuple(spec for unit in plugins for spec in specs_of(unit.params))
    settings = (*built_in, *plugin_specs)
    titles = dict(_FIXED_TITLES)
    for unit in units:
        titles.update(unit.group_titles)
    return Registry(
        units=units,
        plugins=plugins,
        units_by_name={unit.name: unit for unit in units},
        samplers=samplers,
        sampler_names=tuple(samplers),
        logits_samplers=logits,
        placements={unit.name: unit.placement for unit in units},
        labels={unit.name: unit.label for unit in units},
        row_labels={unit.name: unit.row_label for unit in units},
        group_titles=titles,
        groups=tuple(groups_of((*DECLARED_SETTINGS, *plugin_specs))),
        settings=settings,
        settings_by_name={spec.name: spec for spec in settings},
        plugin_settings={spec.name: spec for spec in plugin_specs},
        owners={spec.name: unit.params for unit in units for spec in specs_of(unit.params)},
        default_params={unit.params: unit.params() for unit in units},
        display_order=(
            *(spec for spec in settings if spec.is_number),
            *(spec for spec in settings if spec.is_scalar and not spec.is_number),
        ),
    )


_IN_USE: list[Registry] = []


def registry() -> Registry:
    """The registry in use: the built-in units and the plugins loaded now."""
    if not _IN_USE:
        _IN_USE.append(build_registry())
    return _IN_USE[0]


def install(plugins: tuple[type[SamplerUnit], ...]) -> Registry:
    """Build the registry of the built-in units and `plugins`, and use it from now on."""
    _IN_USE[:] = [build_registry(plugins)]
    return _IN_USE[0]


_check_registry()
