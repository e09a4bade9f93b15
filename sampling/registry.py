"""The registry: the one list of sampler units, and everything derived from it.

`UNITS` lists every built-in unit (`sampling.samplers`). From it come the names an
order may hold (`SAMPLER_NAMES`: the units placed in the order), the units that must
lead it (`LOGITS_SAMPLERS`), each unit's placement (`PLACEMENTS`), the default orders
(llama.cpp's chain with every unit it lacks joined where its placement puts it),
every declared setting (`DECLARED_SETTINGS`: the units' own and the draw's), the
panel's groups and their titles, and each unit's labels on the probability panel.
`SamplerSettings` holds one field per declared setting and checks so at import.
"""

from __future__ import annotations

from collections.abc import Iterable

from sampling.placement import Placement, joined
from sampling.samplers.adaptive_p import AdaptiveP
from sampling.samplers.dry import Dry
from sampling.samplers.epsilon_cutoff import EpsilonCutoff
from sampling.samplers.eta_cutoff import EtaCutoff
from sampling.samplers.grammar import Grammar
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
    LogitBias,
    MinTokens,
    Grammar,
)
"""Every built-in unit. Where each runs is its own `placement`; the registry's order
only decides the order in which units joining an order at one place join it (the
cutoffs before min-p, in text-generation-webui's order)."""

UNITS_BY_NAME: dict[str, type[SamplerUnit]] = {unit.name: unit for unit in UNITS}
"""Every unit by name: the built-in ones, then any plugin (`sampling.plugins`)."""

SAMPLERS: dict[str, type[SamplerUnit]] = {
    unit.name: unit for unit in UNITS if unit.placement.in_order
}
"""Every unit an order may name, by its name (llama.cpp's `--samplers` names; a
plugin's own name)."""

SAMPLER_NAMES: list[str] = list(SAMPLERS)
"""Every name the chain's order may hold (llama.cpp's `--samplers` names), in registry
order, then any plugin's (`sampling.plugins` keeps it in step with `SAMPLERS`)."""

LOGITS_SAMPLERS: list[str] = [name for name, unit in SAMPLERS.items() if unit.kind == "logits"]
"""The samplers that rewrite logits before their order is read: they come first (a
plugin's too, once loaded)."""

CUT_NAMES: tuple[str, ...] = (
    "none",
    "greedy",
    *(unit.name for unit in UNITS if not unit.placement.in_order and unit.kind == "logits"),
    *SAMPLER_NAMES,
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

PLACEMENTS: dict[str, Placement] = {unit.name: unit.placement for unit in UNITS}
"""Each unit's placement by name, in registry order (then any plugin's: in the order)."""

_JOINING = tuple((unit.name, unit.placement) for unit in UNITS if unit.placement.joins)

CHAT_ORDER: tuple[str, ...] = joined(LLAMA_CPP_ORDER, _JOINING)
"""The order new chats and `generate` start from (`DEFAULT_CHAT_SETTINGS`): llama.cpp's
chain, with every unit it lacks where its placement puts it once switched on. Without
them (off by default), it runs as `LLAMA_CPP_ORDER`."""

TEMPERATURE_FIRST_ORDER: tuple[str, ...] = joined(
    (
        *LOGITS_SAMPLERS,
        "temperature",
        *(name for name in LLAMA_CPP_ORDER if name not in (*LOGITS_SAMPLERS, "temperature")),
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
    choices=tuple((name, unit.label) for name, unit in SAMPLERS.items()),
    leading=tuple(LOGITS_SAMPLERS),
)
"""The chain's order: the names an order may hold are the registry's."""

DECLARED_SETTINGS: tuple[SettingSpec, ...] = (
    *(spec for unit in UNITS for spec in unit.specs),
    *DRAW_SETTINGS,
    ORDER_SETTING,
)
"""Every setting the units and the draw declare (`SamplerSettings` orders them)."""

GROUP_TITLES: dict[str, str] = {
    "core": "core",
    "order": "chain order",
    **{group: title for unit in UNITS for group, title in unit.group_titles.items()},
}
"""Each panel group's title."""


def groups_of(specs: Iterable[SettingSpec]) -> list[str]:
    """The panel's groups of some settings: the core, the others in turn, the order."""
    inner = dict.fromkeys(spec.group for spec in specs if spec.group not in ("core", "order"))
    return ["core", *inner, "order"]


GROUPS: list[str] = groups_of(DECLARED_SETTINGS)
"""The panel's groups of settings: the core, the units' groups in registry order (then
any plugin's), the order."""

LABELS: dict[str, str] = {unit.name: unit.label for unit in UNITS}
"""Each unit's name on the probability panel's bars."""

ROW_LABELS: dict[str, str] = {unit.name: unit.row_label for unit in UNITS}
"""Each unit's name on a candidate row it removed."""


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
    if len(UNITS_BY_NAME) != len(UNITS):
        raise RuntimeError(f"two sampler units share a name: {[u.name for u in UNITS]}")
    seen: dict[str, str] = {}
    for unit in UNITS:
        for spec in unit.specs:
            if spec.name in seen:
                raise RuntimeError(f"{unit.name} and {seen[spec.name]} both declare {spec.name}")
            seen[spec.name] = unit.name
    for unit in UNITS:
        for group, title in unit.group_titles.items():
            if GROUP_TITLES[group] != title:
                raise RuntimeError(f"{unit.name} titles group {group!r} otherwise: {title!r}")
    untitled = sorted(set(GROUPS) - set(GROUP_TITLES))
    if untitled:
        raise RuntimeError(f"panel groups without a title: {untitled}")
    check_declarations(UNITS)
    for order in (CHAT_ORDER, TEMPERATURE_FIRST_ORDER):
        if sorted(order) != sorted(SAMPLER_NAMES):
            raise RuntimeError(f"a default order lacks a unit placed in the order: {order}")


_check_registry()
