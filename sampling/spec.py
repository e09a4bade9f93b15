"""Every sampler setting, as the rest of samplescope reads them.

Each setting is declared once, by the unit that owns it (`sampling.samplers`,
listed in `sampling.registry`). `SETTINGS` holds one `SettingSpec` per
`SamplerSettings` field, in field order, and everything else is derived from it:
the record's validation, every command's flags, the sampling panel's sliders and
toggles (grouped by `SettingSpec.group`, in `GROUPS` order), the compare view's
fields and `--set` keys, and `settings_summary` (in `sampling.settings`).
"""

from __future__ import annotations

from sampling.registry import GROUP_TITLES, GROUPS, LOGITS_SAMPLERS, SAMPLER_NAMES
from sampling.setting_spec import (
    GREEDY_TEMPERATURE,
    MAX_SEED,
    SCALAR_KINDS,
    SettingKind,
    SettingSpec,
    SettingValue,
    SliderRange,
)
from sampling.settings import SETTINGS, SETTINGS_BY_NAME

__all__ = ["DISPLAY_ORDER", "GREEDY_TEMPERATURE", "GROUPS", "GROUP_TITLES", "LOGITS_SAMPLERS"]
__all__ += ["MAX_SEED"]
__all__ += ["SAMPLER_NAMES", "SCALAR_KINDS", "SETTINGS", "SETTINGS_BY_NAME", "SettingKind"]
__all__ += ["SettingSpec", "SettingValue", "SliderRange", "find_setting"]


DISPLAY_ORDER: list[SettingSpec] = [s for s in SETTINGS if s.is_number] + [
    s for s in SETTINGS if s.is_scalar and not s.is_number
]
"""Numbers first, then switches, each in field order: how the panel and forms list the
one-valued settings (the order, biases and breakers have their own editors). A
plugin's settings join each part (`sampling.plugins`)."""


def find_setting(key: str) -> SettingSpec | None:
    """The setting a key names: a short key ("t"), a field name, or one with dashes."""
    for spec in SETTINGS:
        if key == spec.short_key:
            return spec
    return SETTINGS_BY_NAME.get(key.replace("-", "_"))
