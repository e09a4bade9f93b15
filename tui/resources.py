"""Files that ship with the app: `assets/` in a checkout, `tui.assets` in the wheel."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from backend.config.presets import PresetError, parse_presets
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry

PRESETS_FILE = "presets.toml"
_CHECKOUT_ASSETS = Path(__file__).resolve().parent.parent / "assets"


def asset_text(name: str) -> tuple[str, str]:
    """The text of a shipped asset and where it was found.

    Raises:
        OSError: Neither the installed package data nor the checkout has it.
    """
    try:
        resource = importlib.resources.files("tui.assets") / name
        if resource.is_file():
            return resource.read_text(encoding="utf-8"), str(resource)
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        pass
    checkout = _CHECKOUT_ASSETS / name
    return checkout.read_text(encoding="utf-8"), str(checkout)


def shipped_presets(registry: Registry = BUILT_IN_REGISTRY) -> dict[str, SamplerSettings]:
    """The presets that ship with samplescope, by name, in file order, made with
    `registry`.

    Raises:
        PresetError: The file is missing or holds a bad preset.
    """
    try:
        text, where = asset_text(PRESETS_FILE)
    except OSError as error:
        raise PresetError(f"cannot read the shipped presets file: {error}") from error
    return parse_presets(text, where, registry)


def available_presets(registry: Registry = BUILT_IN_REGISTRY) -> dict[str, SamplerSettings]:
    """The shipped presets, then the user's own (`<config dir>/presets.toml`, which
    `samplescope preset import` adds to); a user's preset of a shipped name wins. Each
    is made with `registry` (the front door's).

    Raises:
        PresetError: A presets file is missing (the shipped one) or holds a bad preset.
    """
    from backend.config.paths import user_presets_path
    from backend.config.presets import load_presets

    presets = shipped_presets(registry)
    user_file = user_presets_path()
    if user_file.exists():
        presets.update(load_presets(user_file, registry))
    return presets
