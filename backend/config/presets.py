"""Named sampler presets: a TOML file of tables of settings.

The app's shipped presets live in `assets/`; the app finds them and hands their text
or path here.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from backend.config.user_files import DEFAULT_LIMIT, UserFileError, read_user_text
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SamplescopeError, SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry
from sampling.thinking_settings import thinking_record

PRESETS_FILE = "presets.toml"


class PresetError(SamplescopeError):
    """The presets file is missing or holds a bad preset; the message names it."""


def load_presets(path: Path, registry: Registry = BUILT_IN_REGISTRY) -> dict[str, SamplerSettings]:
    """Every preset in a presets file, by name, in file order, made with `registry`.

    Raises:
        PresetError: The file cannot be read (not a regular file, too large, not
            UTF-8) or parsed, or a preset has an unknown field or a bad value (the
            message names the file, the preset and the field).
    """
    try:
        text = read_user_text(Path(path), DEFAULT_LIMIT)
    except UserFileError as error:
        raise PresetError(f"cannot read the presets file: {error}") from None
    return parse_presets(text, str(path), registry)


def parse_presets(
    text: str, where: str, registry: Registry = BUILT_IN_REGISTRY
) -> dict[str, SamplerSettings]:
    """Every preset in the text of a presets file, by name, in file order.

    Args:
        text: The file's TOML text.
        where: Where the text came from, for error messages.
        registry: The registry the presets are made with (the front door's).

    Raises:
        PresetError: The text is not TOML, or a preset has an unknown field or a bad
            value (the message names the file, the preset and the field).
    """
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PresetError(f"{where}: not valid TOML: {error}") from error
    except ValueError:  # an integer past Python's 4,300 digits
        raise PresetError(f"{where}: holds a number too long to read") from None
    except RecursionError:
        raise PresetError(f"{where}: nests tables or arrays too deeply") from None
    presets: dict[str, SamplerSettings] = {}
    for name, values in data.items():
        if not isinstance(values, dict):
            raise PresetError(
                f"{where}: preset {name!r} must be a table of settings, not {values!r}"
            )
        try:
            presets[name] = SamplerSettings.from_dict(values, registry)
            thinking_record(presets[name])  # think_set is read now, not at the first step
        except SettingsError as error:
            raise PresetError(f"{where}: preset {name!r}: {error}") from error
        except TypeError as error:
            raise PresetError(f"{where}: preset {name!r}: {error}") from error
    if not presets:
        raise PresetError(f"{where}: holds no presets")
    return presets
