"""The sampler settings flags, the same on every command, derived from `sampling.spec`.

Every `SamplerSettings` field gets `--field-name` (plus its short flag, e.g. `-t`):
numbers take a value, choices take one of their values, booleans are
`--field-name` / `--no-field-name`. Every flag defaults to unset, so that
`settings_from_args` changes only what was given.
"""

from __future__ import annotations

import argparse

from sampling.settings import SamplerSettings
from sampling.spec import SETTINGS, SettingSpec


def add_settings_flags(parser: argparse.ArgumentParser) -> None:
    """Add the sampler settings flags to a command's parser (all default to unset)."""
    group = parser.add_argument_group("sampling")
    for spec in SETTINGS:
        _add_flag(group, spec)


def _add_flag(group: argparse._ArgumentGroup, spec: SettingSpec) -> None:
    names = [spec.flag] if spec.short_flag is None else [spec.flag, spec.short_flag]
    if spec.kind == "bool":
        group.add_argument(
            *names,
            dest=spec.name,
            action=argparse.BooleanOptionalAction,
            default=None,
            help=spec.help,
        )
    elif spec.kind == "choice":
        group.add_argument(
            *names,
            dest=spec.name,
            choices=spec.choice_values,
            default=None,
            help=spec.help,
        )
    else:
        number = int if spec.kind == "int" else float
        group.add_argument(*names, dest=spec.name, type=number, default=None, help=spec.help)


def settings_from_args(args: argparse.Namespace, base: SamplerSettings) -> SamplerSettings:
    """The settings the flags ask for, on top of `base`.

    Raises:
        SettingsError: A flag's value is out of range (the message names it).
    """
    changes = {
        spec.name: getattr(args, spec.name)
        for spec in SETTINGS
        if getattr(args, spec.name, None) is not None
    }
    return base.with_changes(**changes)


def settings_with_user_config(base: SamplerSettings) -> SamplerSettings:
    """`base` with the user's config file's [settings] applied, as the app does.

    Flags then go on top (`settings_from_args`). A broken config file is ignored
    here: the commands that load a model report it (see `chosen_model_path`).
    """
    from backend.config.config import load_config_or_default, settings_with_config

    config, _problem = load_config_or_default()
    return settings_with_config(base, config)
