"""`samplescope samplers`: the built-in samplers and the user's own, with their settings."""

from __future__ import annotations

import argparse
import json

from backend.config.sampler_files import SAMPLER_FILE_FLAG, samplers_dir
from sampling.settings.registry import Registry
from tui.cli.options.output import add_json_flag
from tui.cli.options.sampler_registry import registry_of_args

GROUP = "setup"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `samplers` to the command line."""
    parser = subparsers.add_parser(
        "samplers",
        help="list the built-in samplers and your own",
        description=(
            "List every sampler unit: the built-in ones and the plugins loaded from "
            f"{samplers_dir()} or given with {SAMPLER_FILE_FLAG} PATH (before the command "
            "or after it), each with the settings it declares."
        ),
    )
    add_json_flag(
        parser,
        "a JSON list of objects with name, builtin, placement, settings (and a plugin's"
        " file, sha256)",
    )
    parser.set_defaults(func=run)


def sampler_list(registry: Registry) -> list[dict[str, object]]:
    """Each sampler unit of `registry`: its name, whether built in, where it runs (its placement's
    kind, `sampling.settings.placement`), its settings' names (and for a plugin its file and
    the file's SHA-256)."""
    origins = registry.origins
    listed: list[dict[str, object]] = []
    for name, unit in registry.units_by_name.items():
        entry: dict[str, object] = {
            "name": name,
            "builtin": name not in origins,
            "placement": registry.placements[name].kind,
            "settings": [spec.name for spec in unit.specs],
        }
        if name in origins:
            entry["file"] = origins[name].path
            entry["sha256"] = origins[name].sha256
        listed.append(entry)
    return listed


def run(args: argparse.Namespace) -> int:
    """Print the samplers, as a table or as JSON."""
    registry = registry_of_args(args)
    if args.json:
        print(json.dumps(sampler_list(registry), indent=2))
        return 0
    origins = registry.origins
    for name, unit in registry.units_by_name.items():
        kind = f"plugin {origins[name].path}" if name in origins else "built-in"
        settings = ", ".join(spec.name for spec in unit.specs) or "-"
        print(f"{name:<14} {kind:<10} {settings}")
    return 0
