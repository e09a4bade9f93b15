"""Which control each setting gets, and how the panel groups them (from
`sampling.settings.registry.Registry.settings`)."""

from __future__ import annotations

from textual.widget import Widget

from backend.config.setting_input import LINE_MARK
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.samplers.grammar import GrammarParams
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry, registry_of
from sampling.settings.spec import SettingSpec, SettingValue
from sampling.settings.summary import usual_orders
from tui.panel.chain_order import ChainOrder
from tui.panel.slider import Slider
from tui.panel.text_setting import TextSetting
from tui.panel.toggle import Toggle

CORE_GROUP = "core"
ORDER_GROUP = "order"
ORDER_FIELD = "samplers"
GRAMMAR_GROUP = "grammar"

_PLACEHOLDERS = {
    "logit_bias": "hello=-inf; 42=+2",
    "dry_sequence_breakers": '["\\n", ":", "\\"", "*"]',
    "grammar": 'root ::= "yes" | "no"  (⏎ breaks a line; @file loads one)',
    "json_schema": '{"type": "object", ...}  (@file loads one)',
    "grammar_triggers": 'regexes, e.g. ["<tool_call>"]',
}


def group_specs(registry: Registry = BUILT_IN_REGISTRY) -> list[tuple[str, list[SettingSpec]]]:
    """(group, its settings), groups in the panel's order: the core, the chain's order,
    then `registry`'s `groups`.

    Within a group: numbers, then switches (as the registry's `display_order`), then the
    several-valued settings (order, biases, breakers).
    """
    listed = [
        *registry.display_order,
        *(spec for spec in registry.settings if not spec.is_scalar),
    ]
    groups: dict[str, list[SettingSpec]] = {}
    for spec in listed:
        groups.setdefault(spec.group, []).append(spec)
    shown = (CORE_GROUP, ORDER_GROUP, *registry.groups)
    known = [name for name in dict.fromkeys(shown) if name in groups]
    rest = [name for name in groups if name not in registry.groups]
    return [(name, groups[name]) for name in known + rest]


def group_title(group: str, on: bool, settings: SamplerSettings | None = None) -> str:
    """A group's title; "● on" marks a group other than the core where something is on
    (the grammar's group names the grammar: "● json schema", "● lazy gbnf")."""
    registry = BUILT_IN_REGISTRY if settings is None else registry_of(settings)
    title = registry.group_titles.get(group, group)
    if not on or group == CORE_GROUP:
        return title
    spec = settings.of(GrammarParams).spec if settings is not None else None
    return f"{title}  ● {spec.title if group == GRAMMAR_GROUP and spec else 'on'}"


def group_is_on(group: str, settings: SamplerSettings) -> bool:
    """Whether a setting of the group changes the sampling (the order: neither the
    temperature first nor llama.cpp's chain).

    A setting that only serves others (a window such as `repeat_last_n`, which
    `repeat_penalty` needs) counts only when one of those is on too.
    """
    registry = registry_of(settings)
    specs = [spec for spec in registry.settings if spec.group == group]
    for spec in specs:
        if spec.name == ORDER_FIELD:
            if settings.order not in usual_orders(settings.registry):
                return True
            continue
        if not _is_on(spec, settings):
            continue
        served = [other for other in registry.settings if other.needs == spec.name]
        if not served or any(_is_on(other, settings) for other in served):
            return True
    return False


def _is_on(spec: SettingSpec, settings: SamplerSettings) -> bool:
    """Whether a setting with an off value is away from it (and what it needs is on)."""
    if spec.off is None and spec.off_at_or_below is None:
        return False
    if spec.is_off(getattr(settings, spec.name)):
        return False
    needs = spec.needs
    return needs is None or _is_on(registry_of(settings).settings_by_name[needs], settings)


def setting_text(spec: SettingSpec, value: SettingValue) -> str:
    """A text setting's value as its input shows it (what `spec.parse` reads back; a
    grammar's line breaks as ⏎, which `backend.config.setting_input` reads back)."""
    text = spec.format(value)
    return text.replace("\n", LINE_MARK) if spec.kind == "text" else text


def control_for(spec: SettingSpec, settings: SamplerSettings) -> Widget:
    """The control for one setting, showing its value in `settings`.

    A number gets a slider, a boolean or a choice a toggle, the chain's order the
    order editor, any other kind a text input.
    """
    value = getattr(settings, spec.name)
    if spec.name == ORDER_FIELD:
        names = [str(name) for name in spec.choice_values]  # the built-ins, then plugins
        return ChainOrder(spec.name, spec.label, names, settings.order)
    if spec.kind in ("bool", "choice"):
        return Toggle(spec.name, spec.label, spec.choices, value)
    if spec.slider is None:
        placeholder = _PLACEHOLDERS.get(spec.name, "")
        return TextSetting(spec.name, spec.label, setting_text(spec, value), placeholder)
    return Slider(
        spec.name,
        spec.label,
        minimum=spec.slider.soft_min,
        maximum=spec.slider.soft_max,
        step=spec.slider.fine,
        coarse=spec.slider.coarse,
        value=value,
        integer=spec.kind == "int",
        hard_minimum=spec.slider.hard_min,
        hard_maximum=spec.slider.hard_max,
    )
