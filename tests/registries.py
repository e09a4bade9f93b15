"""Registries the tests build, as a front door does: the built-in one (or any other)
with a plugin file joined. Nothing is put in use: a test hands the registry it built
to what it tests (a settings record, the app, the store), so no test undoes anything."""

from __future__ import annotations

from pathlib import Path

from backend.config.sampler_files import load_sampler_file
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.plugins import PluginOrigin
from sampling.settings.registry import Registry


def with_plugin(path: Path, registry: Registry = BUILT_IN_REGISTRY) -> Registry:
    """`registry` with the plugin file at `path` joined.

    Raises:
        PluginError: As `load_sampler_file`.
    """
    return load_sampler_file(path, registry)


def origin_of(registry: Registry, path: Path) -> PluginOrigin:
    """The origin of the plugin `registry` loaded from `path`."""
    return next(origin for origin in registry.origins.values() if origin.path == str(path))
