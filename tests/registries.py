"""Registries the tests build, as a front door does: the registry in use with a plugin
file joined, or without one. Whatever a test puts in use, the conftest puts the
session's registry back after it (`registry_restored`), so no test undoes its own."""

from __future__ import annotations

from pathlib import Path

from backend.config.sampler_files import load_sampler_file
from sampling.plugins import PluginOrigin
from sampling.settings.record import use_registry
from sampling.settings.registry import registry


def load_plugin(path: Path) -> PluginOrigin:
    """Put in use the registry in use with the plugin file at `path` joined; its origin.

    Raises:
        PluginError: As `load_sampler_file`.
    """
    joined = load_sampler_file(path, registry())
    use_registry(joined)
    return next(origin for origin in joined.origins.values() if origin.path == str(path))


def drop_plugin(name: str) -> None:
    """Put in use the registry in use without the plugin `name`."""
    use_registry(registry().without(name))
