"""`--set K=V,...`: settings from key=value pairs on top of the off values and the
config's [settings] (each column of `compare`, each base of `sweep`)."""

from __future__ import annotations

from typing import Any

from backend.config.setting_input import read_setting_text
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SamplescopeError, SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry
from sampling.thinking_settings import THINK_PREFIX, thinking_record, with_thinking_change
from tui.cli.options.settings import settings_with_user_config


def short_keys(registry: Registry = BUILT_IN_REGISTRY) -> dict[str, str]:
    """Short keys accepted by --set, besides the settings' own field names (a plugin of
    `registry` adds its own)."""
    return {spec.short_key: spec.name for spec in registry.settings if spec.short_key}


class SetArgumentError(SamplescopeError):
    """A --set is wrong; the message says which pair and why."""


def parse_set(text: str, registry: Registry = BUILT_IN_REGISTRY) -> SamplerSettings:
    """Settings from "t=0.8,k=40" (on top of the off values and the config's [settings]),
    made with `registry` (the run's); a key after "think." sets the thinking's own
    ("think.t=0.6": `think_set`).

    Raises:
        SetArgumentError: A pair is malformed, or a key unknown.
        SettingsError: A value is out of range.
    """
    changes: dict[str, Any] = {}
    thinking: list[tuple[str, str]] = []
    for pair in (part.strip() for part in text.split(",")):
        if not pair:
            continue
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep:
            raise SetArgumentError(f"--set {text!r}: {pair!r} is not key=value")
        if key.startswith(THINK_PREFIX):  # the thinking's own: "think.t=0.6"
            thinking.append((key.removeprefix(THINK_PREFIX), value))
            continue
        spec = registry.find_setting(key)
        if spec is None:
            known = ", ".join([*short_keys(registry), *sorted(registry.settings_by_name)])
            raise SetArgumentError(
                f"--set {text!r}: unknown key {key!r} (use a short key or a field name: {known})"
            )
        if not spec.per_column:
            flags = "/".join(flag for flag in (spec.short_flag, spec.flag) if flag)
            raise SetArgumentError(
                f"--set {text!r}: every column shares one {spec.name}; give it with {flags}"
            )
        # A grammar or a schema holds commas: "@path" reads it from a file.
        text_kind = spec.kind == "text"
        changes[spec.name] = (
            read_setting_text(spec, value, None) if text_kind else spec.coerce(value)
        )
    settings = settings_with_user_config(SamplerSettings(registry)).with_changes(**changes)
    for key, value in thinking:
        try:
            settings = with_thinking_change(settings, key, value)
        except SettingsError as error:
            raise SetArgumentError(f"--set {text!r}: {THINK_PREFIX}{key}: {error}") from None
    thinking_record(settings)  # a think_set=… pair is read now, not at the first step
    return settings
