"""The sampler settings flags, the same on every command, derived from
`sampling.settings.registry.Registry.settings`.

Every `SamplerSettings` field gets `--field-name` (plus its short flag, e.g. `-t`):
numbers take a value, choices take one of their values, booleans are
`--field-name` / `--no-field-name`, and the order, biases and texts take their text
form (`--samplers "top_k;temperature;min_p"`, `--logit-bias "42=+2"`). Every flag
defaults to unset, so that `settings_from_args` changes only what was given.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from backend.config.user_files import UserFileError, read_user_text
from sampling.errors import SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry, registry_of
from sampling.settings.spec import SettingSpec
from sampling.settings.text import bias_entries, bias_pairs
from sampling.thinking_settings import thinking_record
from tui.cli.options.sampler_registry import registry_of_args

Tokenize = Callable[[str], list[int]]
"""A model's tokenizer: text to token ids, no BOS."""


#: The flags that read a text setting from a file: flag's field → the setting.
FILE_FLAGS = {"grammar_file": "grammar", "json_schema_file": "json_schema"}


def add_settings_flags(parser: argparse.ArgumentParser, registry: Registry) -> None:
    """Add the sampler settings flags of `registry` to a command's parser (all default
    to unset)."""
    group = parser.add_argument_group("sampling")
    for spec in registry.settings:
        _add_flag(group, spec)
    for field, setting in FILE_FLAGS.items():
        group.add_argument(
            "--" + field.replace("_", "-"),
            dest=field,
            default=None,
            metavar="PATH",
            help=f"read --{setting.replace('_', '-')} from a file",
        )


def _file_settings(args: argparse.Namespace) -> dict[str, str]:
    """The text settings `--grammar-file` and `--json-schema-file` read.

    Raises:
        SettingsError: A file cannot be read, or its setting is also given as text.
    """
    read: dict[str, str] = {}
    for field, setting in FILE_FLAGS.items():
        path = getattr(args, field, None)
        if path is None:
            continue
        if getattr(args, setting, None) is not None:
            raise SettingsError(field, path, f"either --{setting.replace('_', '-')} or a file")
        try:
            read[setting] = read_user_text(Path(path))
        except UserFileError as error:
            raise SettingsError(field, path, f"a readable UTF-8 file ({error})") from None
    return read


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


def settings_from_args(
    args: argparse.Namespace, base: SamplerSettings, tokenize: Tokenize | None = None
) -> SamplerSettings:
    """The settings the flags ask for, on top of `base`.

    Args:
        args: The parsed flags.
        base: What an unset flag leaves as it is.
        tokenize: The model's tokenizer, to read `--logit-bias` entries given as
            token text ("hello=-inf"); without it only token ids are read.

    Raises:
        SettingsError: A flag's value is out of range or unreadable (the message
            names it), a `--logit-bias` text is not exactly one token, or
            `--think-set` names a setting wrongly.
    """
    changes = {
        spec.name: getattr(args, spec.name)
        if spec.is_scalar
        else spec.coerce(getattr(args, spec.name))
        for spec in registry_of(base).settings
        if getattr(args, spec.name, None) is not None and spec.name != "logit_bias"
    }
    text = getattr(args, "logit_bias", None)
    if text is not None:
        changes["logit_bias"] = logit_bias_from_text(text, tokenize)
    changes.update(_file_settings(args))
    if changes.get("grammar") and changes.get("json_schema"):
        raise SettingsError(
            "grammar",
            "(and a JSON schema)",
            "either a grammar or a JSON schema: the schema would win, leaving the grammar unused",
        )
    settings = base.with_changes(**changes)
    thinking_record(settings)  # --think-set is read before the model loads
    return settings


def flag_settings(args: argparse.Namespace) -> list[str]:
    """The settings the flags give (a file flag gives its text setting)."""
    named = [
        spec.name
        for spec in registry_of_args(args).settings
        if getattr(args, spec.name, None) is not None
    ]
    named += [
        setting for field, setting in FILE_FLAGS.items() if getattr(args, field, None) is not None
    ]
    return named


def settings_with_user_config(base: SamplerSettings) -> SamplerSettings:
    """`base` with the user's config file's [settings] applied, as the app does.

    Flags then go on top (`settings_from_args`). A broken config file is ignored
    here: the commands that load a model report it (see `chosen_model_path`).
    """
    from backend.config.config import load_config_or_default, settings_with_config

    config, _problem = load_config_or_default(registry=registry_of(base))
    return settings_with_config(base, config)


def user_config_settings(registry: Registry) -> list[str]:
    """The settings the user's config file's [settings] gives, read with `registry`
    (none when it is broken)."""
    from backend.config.config import load_config_or_default

    config, _problem = load_config_or_default(registry=registry)
    return list(config.settings_overrides)


def bias_needs_tokenizer(args: argparse.Namespace) -> bool:
    """Whether `--logit-bias` names a token by its text (the model must load first)."""
    text = getattr(args, "logit_bias", None)
    if text is None:
        return False
    try:
        return any(isinstance(key, str) for key, _ in bias_entries(text))
    except ValueError:
        return False  # settings_from_args reports it


def logit_bias_from_text(text: str, tokenize: Tokenize | None) -> tuple[tuple[int, float], ...]:
    """`--logit-bias "hello=-inf,42=+2"` as (token id, bias) pairs.

    Raises:
        SettingsError: A pair is malformed, a text is not exactly one token, or a
            text comes without a tokenizer.
    """
    try:
        entries = bias_entries(text)
    except ValueError as error:
        raise SettingsError("logit_bias", text, f"token=bias pairs: {error}") from None
    pairs: list[tuple[int, float]] = []
    for key, bias in entries:
        if isinstance(key, str):
            if tokenize is None:
                raise SettingsError(
                    "logit_bias", text, f"token ids: {key!r} is text and no model is loaded"
                )
            tokens = tokenize(key)
            if len(tokens) != 1:
                raise SettingsError(
                    "logit_bias",
                    text,
                    f"one token per entry: {key!r} is {len(tokens)} tokens {tokens}",
                )
            key = tokens[0]
        pairs.append((key, bias))
    try:
        return bias_pairs(pairs)
    except ValueError as error:
        raise SettingsError("logit_bias", text, str(error)) from None
