"""`samplescope config`: where the config file is, and the configuration in effect."""

from __future__ import annotations

import argparse
import sys

from backend.config.config import effective_toml, load_config, model_with_config
from backend.config.model_path import resolve_model_path
from backend.config.paths import default_config_path
from sampling.built_in import chat_defaults
from sampling.errors import SamplescopeError
from sampling.settings.registry import Registry
from tui.cli.options.sampler_registry import registry_of_args

TEMPLATE = """\
# samplescope configuration. Every entry is optional; command-line flags override it.

# model = "~/models/some-model.gguf"     # default model (else the bundled SmolLM2)
# theme = "textual-dark"                 # a Textual theme name
# rpc = "10.0.0.2:50052,10.0.0.3:50052"  # split the model across llama.cpp RPC servers
# model_dirs = ["~/models"]              # more folders of GGUFs for `samplescope models`
# surprise = "p<0.05"                   # tokens [ ] jump to: raw p below, or "surprise>2"
# repack = false                         # true: repacked weights (faster, inexact side by side)

[settings]                               # any sampler setting
# temperature = 0.8
# top_k = 40
# top_p = 0.95
# min_p = 0.05
# seed = 42

[keys]                                   # action = "key"
# quit = "ctrl+q"

[bans]                                   # phrases a reply may not hold: it backtracks
# phrases = ["as an AI", "delve into"]
# ignore_case = false
# regex = false                          # each phrase a Python regular expression
# tries = 32                             # tokens banned at one place before the reply stops
"""


GROUP = "setup"


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], registry: Registry
) -> None:
    """Add `config` to the command line."""
    parser = subparsers.add_parser(
        "config",
        help="show the config file's path or the configuration in effect",
        description="Without options, or with --show: print the configuration in effect "
        "(the config file on top of the built-in defaults) as TOML. --path prints "
        "where the config file is (or would be). --init writes a commented template "
        "there if no file exists.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--path", action="store_true", help="print the config file's path")
    group.add_argument("--show", action="store_true", help="print the effective config")
    group.add_argument("--init", action="store_true", help="write a commented template")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the path or the effective config."""
    path = default_config_path()
    if args.path:
        print(path)
        return 0
    if args.init:
        if path.exists():
            print(f"samplescope: {path} already exists; not overwriting it", file=sys.stderr)
            return 1
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(TEMPLATE, encoding="utf-8")
        print(path)
        return 0
    registry = registry_of_args(args)
    config = load_config(path, registry)  # a broken file is a ConfigError: exit 2 with its line
    try:
        model = str(resolve_model_path(model_with_config(None, config)))
    except SamplescopeError as error:
        model = f"(none: {error})"
    print(effective_toml(config, model=model, base=chat_defaults(registry)), end="")
    return 0
