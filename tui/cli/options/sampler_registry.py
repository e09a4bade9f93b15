"""The registry a command line run uses, carried by its parsed options.

`main` builds it at the front door (the built-in units and the plugins it loaded:
the samplers folder, then --sampler-file) and builds its parsers with it: the
settings flags are its settings, and every command's options carry it
(`registry_of_args`), which the command hands to what it runs.
"""

from __future__ import annotations

import argparse

from sampling.built_in import BUILT_IN_REGISTRY
from sampling.settings.registry import Registry

REGISTRY_DEST = "samplescope.registry"
"""Where the parsed options hold the run's registry: no identifier, so no setting's
flag (a plug-in's included) can write there."""


def carry_registry(parser: argparse.ArgumentParser, registry: Registry) -> None:
    """Make `registry` part of what `parser` (and every command under it) parses."""
    parser.set_defaults(**{REGISTRY_DEST: registry})


def registry_of_args(args: argparse.Namespace) -> Registry:
    """The registry the options carry; the built-in units' for options parsed without
    one (a parser built on its own)."""
    held = getattr(args, REGISTRY_DEST, None)
    return held if isinstance(held, Registry) else BUILT_IN_REGISTRY
