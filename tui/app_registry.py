"""The registry a widget reads: its app's (`SamplescopeApp.registry`, the front door's
units and plugins), never a module's global."""

from __future__ import annotations

from sampling.built_in import BUILT_IN_REGISTRY
from sampling.settings.registry import Registry


def app_registry(app: object) -> Registry:
    """The registry `app` runs with; the built-in units' for an app that holds none
    (a widget mounted alone, in a test)."""
    held = getattr(app, "registry", None)
    return held if isinstance(held, Registry) else BUILT_IN_REGISTRY
