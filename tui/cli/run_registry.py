"""The registry of a command line run: the built-in units and the plugins `main`
loaded (the samplers folder, then --sampler-file).

`main` builds it at the front door and gives it here (`use_run_registry`); the
command line's flags, commands and option helpers read it (`run_registry`). Nothing
below the command line reads it: the app, the backend and the sampler are handed
the registry, or read the one a settings record was made with.
"""

from __future__ import annotations

from sampling.built_in import BUILT_IN_REGISTRY
from sampling.settings.registry import Registry

_RUN: list[Registry] = []


def use_run_registry(registry: Registry) -> None:
    """Make `registry` the run's (`main` alone calls this)."""
    _RUN[:] = [registry]


def end_run() -> None:
    """Forget the run's registry (`main`, as the run ends)."""
    _RUN.clear()


def run_registry() -> Registry:
    """The run's registry; the built-in units' before `main` built one (a command's
    helper called on its own)."""
    return _RUN[0] if _RUN else BUILT_IN_REGISTRY
