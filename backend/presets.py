"""Named sampler presets, read from `assets/presets.toml`.

The file ships inside the wheel as package data of `tui.assets`; in a source checkout
it is the repository's `assets/` directory.
"""

from __future__ import annotations

import importlib.resources
import tomllib
from pathlib import Path
from typing import Any

from sampling.errors import SamplescopeError, SettingsError
from sampling.settings import SamplerSettings

PRESETS_FILE = "presets.toml"


class PresetError(SamplescopeError):
    """The presets file is missing or holds a bad preset; the message names it."""


def default_presets_text() -> tuple[str, str]:
    """The shipped presets file: (its text, where it was found).

    Raises:
        PresetError: Neither the installed package data nor the checkout has it.
    """
    try:
        resource = importlib.resources.files("tui.assets") / PRESETS_FILE
        if resource.is_file():
            return resource.read_text(encoding="utf-8"), str(resource)
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        pass
    checkout = Path(__file__).resolve().parent.parent / "assets" / PRESETS_FILE
    try:
        return checkout.read_text(encoding="utf-8"), str(checkout)
    except OSError as error:
        raise PresetError(f"cannot read the presets file {checkout}: {error}") from error


def load_presets(path: Path | None = None) -> dict[str, SamplerSettings]:
    """Every preset in the file, by name, in file order.

    Args:
        path: A presets TOML file; None for the shipped one.

    Raises:
        PresetError: The file cannot be read or parsed, or a preset has an unknown
            field or a bad value (the message names the file, the preset and the field).
    """
    if path is None:
        text, where = default_presets_text()
    else:
        where = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise PresetError(f"cannot read the presets file {where}: {error}") from error
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PresetError(f"{where}: not valid TOML: {error}") from error
    presets: dict[str, SamplerSettings] = {}
    for name, values in data.items():
        if not isinstance(values, dict):
            raise PresetError(
                f"{where}: preset {name!r} must be a table of settings, not {values!r}"
            )
        try:
            presets[name] = SamplerSettings.from_dict(values)
        except SettingsError as error:
            raise PresetError(f"{where}: preset {name!r}: {error}") from error
        except TypeError as error:
            raise PresetError(f"{where}: preset {name!r}: {error}") from error
    if not presets:
        raise PresetError(f"{where}: holds no presets")
    return presets
