"""What `samplescope sweep` reads from its arguments: the prompts and the grid."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

from backend.config.user_files import UserFileError, load_json, read_user_text
from backend.session.sweep import MAX_SETTINGS, SweepSetting
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SamplescopeError, SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry
from sampling.settings.summary import settings_summary
from sampling.thinking_settings import SHARED, THINK_PREFIX, with_thinking_change
from tui.cli.options.setting_sets import parse_set, short_keys
from tui.cli.options.settings import settings_with_user_config


class SweepArgumentError(SamplescopeError):
    """A prompt, --grid or --set is wrong; the message says which and why."""


def read_prompts(given: list[str], path: Path | None) -> list[str]:
    """The prompts: each `--prompt`, then those of `--prompts FILE`.

    The file holds one prompt a line (blank lines skipped) or, named `*.jsonl`, one
    JSON value a line: a string, or an object with a "prompt" string.

    Raises:
        SweepArgumentError: The file cannot be read, a JSONL line is not a prompt, or
            no prompt is given at all.
    """
    prompts = list(given)
    if path is not None:
        try:
            lines = read_user_text(path).splitlines()
        except UserFileError as error:
            raise SweepArgumentError(f"--prompts: {error}") from None
        jsonl = path.suffix.lower() == ".jsonl"
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            prompts.append(_jsonl_prompt(path, number, line) if jsonl else line)
    if not prompts:
        raise SweepArgumentError("no prompt: give --prompt TEXT or --prompts FILE")
    if empty := [n for n, p in enumerate(prompts, start=1) if not p.strip()]:
        raise SweepArgumentError(f"prompt {empty[0]} is empty")
    return prompts


def _jsonl_prompt(path: Path, number: int, line: str) -> str:
    try:
        value: Any = load_json(line, f"--prompts {path}, line {number}")
    except UserFileError as error:
        raise SweepArgumentError(str(error)) from None
    if isinstance(value, dict):
        value = value.get("prompt")
    if not isinstance(value, str):
        raise SweepArgumentError(
            f"--prompts {path}, line {number}: expected a string or an object with a"
            ' "prompt" string'
        )
    return value


def parse_grid(text: str, registry: Registry = BUILT_IN_REGISTRY) -> tuple[str, list[Any]]:
    """One `--grid "KEY=V1,V2,..."`: the setting's field name and its values (a key
    after "think." is the thinking's own setting: "think.temperature", its values set
    in `think_set`).

    Raises:
        SweepArgumentError: The text is not KEY=VALUES, the key is unknown, not one a
            sample may set alone, or takes text (use --set), or a value is repeated.
        SettingsError: A value is not of the setting's kind.
    """
    key, sep, values = text.partition("=")
    key = key.strip()
    if not sep or not values.strip():
        raise SweepArgumentError(f"--grid {text!r}: expected KEY=V1,V2,...")
    thinking = key.startswith(THINK_PREFIX)
    spec = registry.find_setting(key.removeprefix(THINK_PREFIX))
    if spec is None:
        raise SweepArgumentError(
            f"--grid {text!r}: unknown key {key!r} (use {', '.join(short_keys(registry))} or a"
            f" field name: {', '.join(sorted(registry.settings_by_name))})"
        )
    if not spec.per_column:
        raise SweepArgumentError(
            f"--grid {text!r}: {spec.name} is each sample's own (--seed sets the first)"
        )
    if spec.kind in ("text", "texts", "bias", "order"):
        raise SweepArgumentError(f"--grid {text!r}: {spec.name} takes text: give it with --set")
    texts = [value.strip() for value in values.split(",") if value.strip()]
    if len(texts) > MAX_SETTINGS:
        raise SweepArgumentError(
            f"--grid {spec.name}: {len(texts):,} values, more than a sweep's {MAX_SETTINGS:,}"
            " settings"
        )
    parsed = [spec.coerce(text) for text in texts]
    if len(set(map(repr, parsed))) != len(parsed):
        raise SweepArgumentError(f"--grid {text!r}: a value is given twice")
    if thinking and spec.name in SHARED:
        raise SweepArgumentError(f"--grid {text!r}: {spec.name} is the whole reply's")
    return (THINK_PREFIX if thinking else "") + spec.name, parsed


def grid_settings(
    sets: list[str], grids: list[str], temperature: str, registry: Registry = BUILT_IN_REGISTRY
) -> list[SweepSetting]:
    """Every setting of the sweep: each `--set` (or the off values and the config's
    [settings] when none) times the product of the `--grid`s, the temperature run
    "first" or "last" in the chain.

    Raises:
        SweepArgumentError: A --set or --grid is wrong, two settings are the same, or
            the grid holds more than `MAX_SETTINGS` (the message gives the product).
        SettingsError: A value is out of range.
    """
    bases = [(text, parse_set(text, registry)) for text in sets]
    if not bases:
        bases = [("", settings_with_user_config(SamplerSettings(registry)))]
    axes = [parse_grid(text, registry) for text in grids]
    if len({name for name, _ in axes}) != len(axes):
        raise SweepArgumentError("--grid: a key is given twice")
    sizes = [len(bases)] * (len(bases) > 1) + [len(values) for _, values in axes]
    if math.prod(sizes) > MAX_SETTINGS:
        product = " × ".join(f"{size:,}" for size in sizes)
        raise SweepArgumentError(
            f"the grid is {product} = {math.prod(sizes):,} settings; a sweep runs at most"
            f" {MAX_SETTINGS:,}"
        )
    settings: list[SweepSetting] = []
    for _, base in bases:
        for point in itertools.product(*(values for _, values in axes)):
            changes = {name: value for (name, _), value in zip(axes, point, strict=True)}
            changes["temperature_last"] = temperature == "last"
            try:
                chosen = base.with_changes(
                    **{k: v for k, v in changes.items() if not k.startswith(THINK_PREFIX)}
                )
                for name, value in changes.items():
                    if name.startswith(THINK_PREFIX):
                        chosen = with_thinking_change(
                            chosen, name.removeprefix(THINK_PREFIX), value
                        )
            except SettingsError as error:
                raise SweepArgumentError(f"--grid: {error}") from None
            # Named by what is on; the order is the sweep's, said once in its output.
            name = settings_summary(chosen.with_changes(temperature_last=False))
            settings.append(SweepSetting(name, chosen))
    seen: set[SamplerSettings] = set()
    for setting in settings:
        if setting.settings in seen:
            raise SweepArgumentError(
                f"two settings are the same ({settings_summary(setting.settings)}): each must"
                " differ"
            )
        seen.add(setting.settings)
    return settings
