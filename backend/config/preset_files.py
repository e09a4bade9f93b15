"""Other tools' preset files in, samplescope's presets out: which tool wrote a file,
the settings it means, and the user's own presets file they are saved into.

The user's presets (`<config dir>/presets.toml`) are the shipped presets' format
(`backend.config.presets`): one table per preset, the settings it changes from
samplescope's "off" values.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from backend.config.koboldcpp_format import import_koboldcpp, looks_like_koboldcpp
from backend.config.llama_server_format import import_completion_body
from backend.config.preset_interchange import ImportedPreset, PresetFormatError
from backend.config.presets import PresetError, load_presets
from backend.config.sillytavern_format import import_sillytavern
from backend.config.textgen_webui_format import import_textgen_webui, read_textgen_yaml
from backend.config.user_files import (
    PRESET_LIMIT,
    UserFileError,
    load_json,
    non_finite,
    read_user_text,
)
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry, registry_of

Tool = Literal["sillytavern", "text-generation-webui", "koboldcpp", "llama-server"]
TOOLS: tuple[Tool, ...] = ("sillytavern", "text-generation-webui", "koboldcpp", "llama-server")


def read_preset_file(
    path: Path, tool: Tool | None = None, registry: Registry = BUILT_IN_REGISTRY
) -> ImportedPreset:
    """The settings another tool's preset file sets, and the fields that do not map.

    Args:
        path: A SillyTavern or KoboldCpp JSON file, a text-generation-webui YAML
            file, or a llama-server `/completion` request body (JSON).
        tool: The tool that wrote it; None tells by the suffix and the fields
            (`temp` is SillyTavern's, `rep_pen` without it KoboldCpp's).
        registry: The samplers its order may name (the front door's: a loaded
            plug-in's name too).

    Raises:
        PresetFormatError: The file cannot be read, parsed, or holds a bad field.
    """
    try:
        text = read_user_text(Path(path), PRESET_LIMIT)
    except UserFileError as error:
        raise PresetFormatError(f"cannot read the preset file: {error}") from None
    yaml_suffix = Path(path).suffix.lower() in (".yaml", ".yml")
    try:
        if tool == "text-generation-webui" or (tool is None and yaml_suffix):
            fields = read_textgen_yaml(text, str(path))
            _check_finite(fields)
            return import_textgen_webui(fields, registry)
        data = _json_object(text, str(path))
        _check_finite(data)
        chosen = tool or _json_tool(data)
        if chosen == "koboldcpp":
            return import_koboldcpp(data)
        if chosen == "llama-server":
            return import_completion_body(data, registry)
        return import_sillytavern(data, registry)
    except PresetFormatError as error:
        said = str(error)
        raise PresetFormatError(
            said if said.startswith(f"{path}:") else f"{path}: {said}"
        ) from None
    except (TypeError, ValueError, OverflowError) as error:
        raise PresetFormatError(
            f"{path}: a field has a value of the wrong type: {error}"
        ) from error


def _check_finite(data: dict[str, Any]) -> None:
    """Refuse a field holding NaN or an infinity (JSON's `1e999`, YAML's `.inf`).

    Raises:
        PresetFormatError: Naming the field and the value.
    """
    found = non_finite(data)
    if found is not None:
        field, value = found
        raise PresetFormatError(f"{field}={value!r}: expected a finite number")


def _json_object(text: str, where: str) -> dict[str, Any]:
    try:
        data = load_json(text, where)
    except UserFileError as error:
        raise PresetFormatError(str(error)) from None
    if not isinstance(data, dict):
        raise PresetFormatError(f"{where}: a preset is a JSON object of fields")
    return data


def _json_tool(data: dict[str, Any]) -> Tool:
    """Which tool wrote a JSON preset, by the fields only it writes."""
    if "temp" in data:
        return "sillytavern"
    if looks_like_koboldcpp(data):
        return "koboldcpp"
    if "repeat_penalty" in data or "repeat_last_n" in data or "samplers" in data:
        return "llama-server"
    return "sillytavern"


def imported_settings(
    imported: ImportedPreset, registry: Registry = BUILT_IN_REGISTRY
) -> SamplerSettings:
    """The imported fields on top of samplescope's "off" values, made with `registry`
    (the front door's).

    Raises:
        PresetFormatError: A value is out of samplescope's range (the message names it).
    """
    try:
        return SamplerSettings(registry).with_changes(**imported.changes)
    except SettingsError as error:
        raise PresetFormatError(f"{imported.tool} preset: {error}") from error


def preset_toml(name: str, settings: SamplerSettings) -> str:
    """One preset as a TOML table: the settings that differ from the "off" values."""
    registry = registry_of(settings)
    defaults = SamplerSettings(registry).to_dict()
    lines = [f"[{toml_string(name)}]"]
    for key, value in settings.to_dict().items():
        if value == defaults.get(key):
            continue
        spec = registry.settings_by_name[key]
        lines.append(f"{key} = {_toml_value(value if spec.is_scalar else spec.format(value))}")
    return "\n".join(lines) + "\n"


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, int | float):
        return repr(value)
    return toml_string(str(value))


def toml_string(text: str) -> str:
    """A TOML basic string holding `text`: JSON's escapes, which TOML shares, plus
    U+007F, which JSON leaves raw and TOML forbids."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def save_user_preset(path: Path, name: str, settings: SamplerSettings) -> None:
    """Add a preset to the user's presets file (created with its folder if missing).

    Raises:
        PresetError: The file holds a preset of that name already, or cannot be
            read or written.
    """
    path = Path(path)
    if path.exists() and name in load_presets(path, registry_of(settings)):
        raise PresetError(f"{path} already holds a preset named {name!r}: choose another --name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        before = path.read_text(encoding="utf-8") if path.exists() else ""
        gap = (
            ""
            if not before or before.endswith("\n\n")
            else ("\n" if before.endswith("\n") else "\n\n")
        )
        path.write_text(before + gap + preset_toml(name, settings), encoding="utf-8")
    except OSError as error:
        raise PresetError(f"cannot write the presets file {path}: {error}") from error
