"""A user's own samplers: Python files that define one sampler unit each.

Every `*.py` file of the config directory's `samplers/` folder is loaded, then each
file given with `--sampler-file PATH` (repeatable). A file defines its unit as a
class on the units' interface (see `sampling.plugins`) and names it `SAMPLER`; it
joins the registry the front door builds (`tui.cli.main`) with the file's path and
SHA-256, so that a reply made with it can say which file it ran and replay can tell
when that file is gone or changed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import keyword
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import get_args

from backend.config.paths import config_dir
from backend.config.user_files import UserFileError, read_user_bytes
from sampling.plugins import PluginError, joined
from sampling.settings.params import declared_specs
from sampling.settings.registry import Registry
from sampling.settings.spec import SettingKind, SettingSpec

SAMPLERS_DIRNAME = "samplers"
SAMPLER_FILE_FLAG = "--sampler-file"


def samplers_dir() -> Path:
    """The folder whose `*.py` files are loaded as samplers: `<config dir>/samplers`."""
    return config_dir() / SAMPLERS_DIRNAME


def load_sampler_files(registry: Registry, paths: Sequence[Path] = ()) -> Registry:
    """`registry` with the samplers folder's files loaded, then `paths`.

    Raises:
        PluginError: A file is missing, cannot run, defines no `SAMPLER`, or its
            unit cannot be registered; the message names the file.
    """
    folder = samplers_dir()
    found = sorted(folder.glob("*.py")) if folder.is_dir() else []
    for path in [*found, *paths]:
        registry = load_sampler_file(path, registry)
    return registry


def load_sampler_file(path: Path, registry: Registry) -> Registry:
    """Run one sampler file; `registry` with the unit it names `SAMPLER` joined (the
    same file again: `registry` as it is).

    Raises:
        PluginError: As for `load_sampler_files`.
    """
    try:
        source = read_user_bytes(path)
    except UserFileError as error:
        raise PluginError(f"sampler plugin {path}: {error}") from None
    digest = hashlib.sha256(source).hexdigest()
    module_name = f"samplescope_sampler_{digest[:16]}"
    spec = importlib.util.spec_from_loader(module_name, loader=None, origin=str(path))
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(path)
    sys.modules[module_name] = module  # dataclasses look their module up by name
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)
    except BaseException as error:  # the user's code: even sys.exit() is reported, named
        del sys.modules[module_name]
        raise PluginError(f"sampler plugin {path}: {_what_happened(error)}") from None
    unit = module.__dict__.get("SAMPLER")
    if not isinstance(unit, type):
        raise PluginError(f"sampler plugin {path}: it must name its sampler class SAMPLER")
    problem = specs_problem(unit, registry)
    if problem is not None:
        raise PluginError(f"sampler plugin {path}: {problem}")
    try:
        return joined(registry, unit, str(path), digest)
    except PluginError:
        raise
    except BaseException as error:  # its class's attributes are the user's code too
        raise PluginError(
            f"sampler plugin {path}: its sampler cannot be registered: {_what_happened(error)}"
        ) from None


def specs_problem(unit: type, registry: Registry) -> str | None:
    """What is wrong with a plugin's setting declarations that would break a flag, a
    key or a slider later (checked before it joins `registry`), or None."""
    params = getattr(unit, "params", None)
    specs = getattr(unit, "specs", ()) if params is None else declared_specs(params)
    if not isinstance(specs, tuple):
        return None  # registration says what a unit's specs must be
    taken = {spec.short_key: spec.name for spec in registry.settings if spec.short_key}
    claimed: dict[str, str] = {}  # its own settings' names, keys and short flags
    for spec in specs:
        if not isinstance(spec, SettingSpec):
            return None
        name = spec.name
        if not (isinstance(name, str) and name.isidentifier()) or keyword.iskeyword(name):
            return f"a setting's name must be a Python identifier, not {name!r}"
        if name in claimed.values():
            return f"setting {name!r} is declared twice"
        for part in {name, spec.key, spec.short_flag} - {None}:
            first = claimed.setdefault(str(part), name)
            if first != name:
                return f"settings {first!r} and {name!r} both use {part!r}"
        if spec.kind not in get_args(SettingKind):
            return f"setting {name!r}: unknown kind {spec.kind!r}"
        owner = taken.get(spec.short_key) if spec.short_key else None
        if owner is not None and owner != name:
            return f"setting {name!r}: short key {spec.short_key!r} is {owner!r}'s already"
        flag = spec.short_flag
        if flag is not None and not (len(flag) == 2 and flag[0] == "-" and flag[1].isalpha()):
            return f"setting {name!r}: its short flag must be '-' and a letter, not {flag!r}"
        bound = _non_finite_bound(spec)
        if bound is not None:
            return f"setting {name!r}: its {bound[0]} must be a finite number, not {bound[1]!r}"
        slider = spec.slider
        if slider is not None:
            steps = (slider.fine, slider.coarse)
            if not all(isinstance(v, int | float) and math.isfinite(v) and v > 0 for v in steps):
                return f"setting {name!r}: its slider's steps must be above 0, not {steps}"
            if not slider.soft_min < slider.soft_max:
                return f"setting {name!r}: its slider's soft_min must lie below soft_max"
    return None


def _non_finite_bound(spec: SettingSpec) -> tuple[str, object] | None:
    """A bound of the setting (its range, where it is off, its slider's ends) that is
    not a finite number, with its name, or None: a NaN or infinite bound would let
    every value through or stop none."""
    bounds: list[tuple[str, object]] = [
        (name, getattr(spec, name))
        for name in ("minimum", "maximum", "off_at_or_below", "off_below")
    ]
    if spec.slider is not None:
        bounds += [
            (f"slider's {name}", getattr(spec.slider, name))
            for name in ("soft_min", "soft_max", "hard_min", "hard_max")
        ]
    for name, value in bounds:
        if value is None and not name.startswith("slider"):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            return name, value
        if isinstance(value, float) and not math.isfinite(value):
            return name, value
    return None


def _what_happened(error: BaseException) -> str:
    """An exception the user's code raised, in a few words."""
    if isinstance(error, SystemExit):
        return f"it called sys.exit({error.code!r}) when loaded"
    text = " ".join(str(error).split())[:300]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def file_sha256(path: Path) -> str | None:
    """A file's SHA-256 in hex, or None when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
