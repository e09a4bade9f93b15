"""Which control each setting gets, and how the panel groups them (from `sampling.spec`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from textual.widget import Widget

from sampling import chain
from sampling.settings import SamplerSettings
from sampling.spec import DISPLAY_ORDER, SettingSpec
from tui.widgets.chain_order import ChainOrder
from tui.widgets.slider import Slider
from tui.widgets.text_setting import TextSetting
from tui.widgets.toggle import Toggle

CORE_GROUP = "core"
ORDER_FIELD = "samplers"

#: Each group's title, in the order the panel shows them; a group not named here
#: comes after these, titled by its name.
GROUP_TITLES: dict[str, str] = {
    "core": "core",
    "order": "chain order",
    "penalties": "penalties",
    "dry": "DRY: repeated sequences",
    "xtc": "XTC: exclude top choices",
    "typical": "typical-p · top-n-σ",
    "dynatemp": "dynamic temperature",
    "mirostat": "mirostat",
    "bias": "logit bias",
}

_PLACEHOLDERS = {
    "logit_bias": "hello=-inf, 42=+2",
    "dry_sequence_breakers": '"\\n" ":" "\\"" "*"',
}


def group_of(spec: SettingSpec) -> str:
    """The group a setting is shown in."""
    return str(getattr(spec, "group", CORE_GROUP))


def group_specs() -> list[tuple[str, list[SettingSpec]]]:
    """(group, its settings in display order), groups in the panel's order."""
    groups: dict[str, list[SettingSpec]] = {}
    for spec in DISPLAY_ORDER:
        groups.setdefault(group_of(spec), []).append(spec)
    known = [name for name in GROUP_TITLES if name in groups]
    rest = [name for name in groups if name not in GROUP_TITLES]
    return [(name, groups[name]) for name in known + rest]


def group_title(group: str, on: bool) -> str:
    """A group's title; "● on" marks a closed group where something is switched on."""
    title = GROUP_TITLES.get(group, group)
    return f"{title}  ● on" if on and group != CORE_GROUP else title


def group_is_on(group: str, settings: SamplerSettings) -> bool:
    """Whether any setting of the group is away from its off value."""
    for spec in DISPLAY_ORDER:
        if group_of(spec) != group or spec.off is None:
            continue
        if getattr(settings, spec.name) != spec.off:
            return True
    return False


def chain_order_of(settings: SamplerSettings) -> tuple[str, ...]:
    """The samplers the settings run, in order."""
    return tuple(chain.order_of(settings))


def chain_names() -> tuple[str, ...]:
    """Every sampler the chain may hold, in llama.cpp's default order where known."""
    return tuple(chain.SAMPLERS)


def setting_text(spec: SettingSpec, value: object) -> str:
    """A text setting's value as its input shows it."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return ", ".join(f"{key}={_bias_text(bias)}" for key, bias in value.items())
    if isinstance(value, tuple | list):
        return " ".join(_quoted(item) for item in value)
    return str(value)


def _bias_text(bias: Any) -> str:
    if isinstance(bias, float) and math.isinf(bias):
        return "-inf" if bias < 0 else "+inf"
    return f"{bias:+g}" if isinstance(bias, int | float) else str(bias)


def _quoted(item: object) -> str:
    text = str(item).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def control_for(spec: SettingSpec, settings: SamplerSettings) -> Widget:
    """The control for one setting, showing its value in `settings`.

    A number gets a slider, a boolean or a choice a toggle, the chain's order the
    order editor, any other kind a text input.
    """
    value = getattr(settings, spec.name)
    if spec.name == ORDER_FIELD:
        return ChainOrder(spec.name, spec.label, chain_names(), chain_order_of(settings))
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
