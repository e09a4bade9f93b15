"""`samplescope preset import FILE` / `samplescope preset export`: settings in from
SillyTavern, text-generation-webui, KoboldCpp and llama-server, and out to
llama-server / llama-cli flags, a `/completion` request body and SillyTavern."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from backend.config.paths import user_presets_path
from backend.config.preset_exports import EXPORTS, exported_text
from backend.config.preset_files import (
    TOOLS,
    imported_settings,
    read_preset_file,
    save_user_preset,
)
from backend.config.preset_interchange import PresetFormatError
from backend.config.presets import PresetError
from sampling.built_in import chat_defaults
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry
from sampling.settings.summary import settings_summary
from tui.cli.options.sampler_registry import registry_of_args
from tui.cli.options.settings import (
    add_settings_flags,
    settings_from_args,
    settings_with_user_config,
)

GROUP = "setup"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `preset import` and `preset export` to the command line."""
    parser = subparsers.add_parser(
        "preset",
        help="import another tool's preset, or export settings for another tool",
        description="Bring sampler settings in from other tools, or take them out.",
    )
    actions = parser.add_subparsers(dest="preset_action", metavar="ACTION", required=True)
    importing = actions.add_parser(
        "import",
        help="save another tool's preset among your presets",
        description=(
            "Read a SillyTavern text-completion preset (JSON), a text-generation-webui "
            "preset (YAML), KoboldCpp's sampler settings (JSON) or a llama-server "
            f"/completion request body (JSON), and add it to {user_presets_path()} "
            "(then `compare --preset NAME` and the app offer it). Every field with no "
            "counterpart in samplescope is listed."
        ),
    )
    importing.add_argument("file", type=Path, metavar="FILE", help="the preset file")
    importing.add_argument("--name", help="the preset's name (default: the file's name)")
    importing.add_argument(
        "--from", dest="tool", choices=TOOLS, help="the tool that wrote it (default: guessed)"
    )
    importing.add_argument(
        "--dry-run", action="store_true", help="show what it sets without saving it"
    )
    importing.set_defaults(func=run_import)
    exporting = actions.add_parser(
        "export",
        help="print settings as flags, a /completion body or a SillyTavern preset",
        description=(
            "Print the settings (llama.cpp's defaults and your config's [settings], a "
            "--preset, then the flags given) for another tool. Settings the target "
            "cannot hold are listed on stderr."
        ),
    )
    exporting.add_argument(
        "--format",
        choices=tuple(EXPORTS),
        default="llama-server",
        help="llama-server / llama-cli flags (default), a /completion request body, "
        "or a SillyTavern text-completion preset",
    )
    exporting.add_argument("--preset", help="start from one of your presets or the shipped ones")
    add_settings_flags(exporting, registry)
    exporting.set_defaults(func=run_export)


def run_import(args: argparse.Namespace) -> int:
    """Read a preset file, list what did not map, and save it."""
    try:
        imported = read_preset_file(args.file, args.tool, registry_of_args(args))
        settings = imported_settings(imported, registry_of_args(args))
    except PresetFormatError as error:
        print(f"samplescope: {error}", file=sys.stderr)
        return 1
    name = args.name or args.file.stem
    print(f"{imported.tool} preset {name!r}: {settings_summary(settings)}")
    _print_unmapped("no counterpart, not imported", imported.unmapped, sys.stdout)
    if args.dry_run:
        return 0
    path = user_presets_path()
    try:
        save_user_preset(path, name, settings)
    except PresetError as error:
        print(f"samplescope: {error}", file=sys.stderr)
        return 1
    print(f"saved to {path}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    """Print the settings in the format asked for."""
    try:
        settings = settings_from_args(args, _base(args.preset, registry_of_args(args)))
    except PresetError as error:
        print(f"samplescope: {error}", file=sys.stderr)
        return 1
    # A preset leaves the seed unset (0, its "off" value) so that one seed drives every
    # compare column: no --seed then, unless the flags give one.
    unset = args.preset is not None and args.seed is None
    text, unmapped = exported_text(settings, args.format, seed=not (unset and settings.seed == 0))
    print(text)
    _print_unmapped(f"not in the {args.format} form", unmapped, sys.stderr)
    return 0


def _base(preset: str | None, registry: Registry) -> SamplerSettings:
    """The settings before the flags: a named preset, else the chat's start."""
    if preset is None:
        return settings_with_user_config(chat_defaults(registry))
    from tui.resources import available_presets

    presets = available_presets(registry)
    if preset not in presets:
        raise PresetError(f"unknown preset {preset!r}: choose from {', '.join(map(repr, presets))}")
    return presets[preset]


def _print_unmapped(title: str, unmapped: Any, stream: Any) -> None:
    if unmapped:
        print(f"{title}:", file=stream)
        for entry in unmapped:
            print(f"  {entry.describe()}", file=stream)
