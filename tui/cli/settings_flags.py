"""The sampler settings flags, the same on every command, derived from `sampling.spec`.

Every `SamplerSettings` field gets `--field-name` (plus its short flag, e.g. `-t`):
numbers take a value, choices take one of their values, booleans are
`--field-name` / `--no-field-name`, and the order, biases and texts take their text
form (`--samplers "top_k;temperature;min_p"`, `--logit-bias "42=+2"`). Every flag
defaults to unset, so that `settings_from_args` changes only what was given.
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
    elif spec.is_number:
        number = int if spec.kind == "int" else float
        group.add_argument(*names, dest=spec.name, type=number, default=None, help=spec.help)
    else:  # an order, biases or texts: read by the spec in `settings_from_args`
        group.add_argument(*names, dest=spec.name, default=None, metavar="TEXT", help=spec.help)


def settings_from_args(args: argparse.Namespace, base: SamplerSettings) -> SamplerSettings:
    """The settings the flags ask for, on top of `base`.

    Raises:
        SettingsError: A flag's value is out of range (the message names it).
    """
    changes = {
        spec.name: getattr(args, spec.name)
        if spec.is_scalar
        else spec.coerce(getattr(args, spec.name))
        for spec in SETTINGS
        if getattr(args, spec.name, None) is not None
    }
    return base.with_changes(**changes)
