"""text-generation-webui's presets (`presets/*.yaml`, `modules/presets.py`).

A preset lists only what differs from the tool's `default_preset()`; the rest take
its defaults, which differ from samplescope's in one place that matters here:
`repetition_penalty_range` is 1024. The dynamic temperature is `dynamic_temperature`
with `dynatemp_low` / `dynatemp_high`; the epsilon and eta cutoffs are in units of
1e-4; the chain's order is `sampler_priority`, names one per line.
"""

from __future__ import annotations

from typing import Any

from backend.config.preset_interchange import (
    ImportedPreset,
    PresetFormatError,
    Unmapped,
    from_text_units,
    leftover_fields,
    order_from_names,
)
from backend.config.user_files import UserFileError, load_yaml
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.settings.registry import Registry

TOOL = "text-generation-webui"

DEFAULT_REPETITION_RANGE = 1024
"""text-generation-webui's `repetition_penalty_range` when a preset leaves it out."""

DIRECT_FIELDS: dict[str, str] = {
    "temperature": "temperature",
    "temperature_last": "temperature_last",
    "dynatemp_exponent": "dynatemp_exponent",
    "smoothing_factor": "smoothing_factor",
    "smoothing_curve": "smoothing_curve",
    "top_p": "top_p",
    "min_p": "min_p",
    "top_k": "top_k",
    "repetition_penalty": "repeat_penalty",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "repetition_penalty_range": "repeat_last_n",
    "typical_p": "typical_p",
    "tfs": "tfs",
    "top_a": "top_a",
    "mirostat_mode": "mirostat",
    "mirostat_tau": "mirostat_tau",
    "mirostat_eta": "mirostat_eta",
    "dry_multiplier": "dry_multiplier",
    "dry_base": "dry_base",
    "dry_allowed_length": "dry_allowed_length",
    "xtc_threshold": "xtc_threshold",
    "xtc_probability": "xtc_probability",
    "top_n_sigma": "top_n_sigma",
    "seed": "seed",
}
"""text-generation-webui's fields that hold a samplescope setting as it is."""

TEXT_UNIT_FIELDS = ("epsilon_cutoff", "eta_cutoff")

ORDER_NAMES: dict[str, str | None] = {
    "typical_p": "typ_p",
    "repetition_penalty": "penalties",
    "presence_penalty": "penalties",
    "frequency_penalty": "penalties",
    "dynamic_temperature": None,  # part of the temperature
    "mirostat": None,  # runs in place of the filters, outside the order
}
"""text-generation-webui's `sampler_priority` names that differ from samplescope's."""


def read_textgen_yaml(text: str, where: str) -> dict[str, Any]:
    """A text-generation-webui preset's fields.

    Raises:
        PresetFormatError: The text is not YAML, or not a mapping of fields.
    """
    try:
        data = load_yaml(text, where)
    except UserFileError as error:
        raise PresetFormatError(str(error)) from None
    if not isinstance(data, dict):
        shown = " ".join(repr(data).split())[:80]
        raise PresetFormatError(f"{where}: a preset is a mapping of fields, not {shown}")
    return data


def import_textgen_webui(
    data: dict[str, Any], registry: Registry = BUILT_IN_REGISTRY
) -> ImportedPreset:
    """The settings a text-generation-webui preset sets (its defaults where it is silent).

    Raises:
        PresetFormatError: A field holds a value of the wrong shape.
    """
    changes: dict[str, Any] = {"repeat_last_n": DEFAULT_REPETITION_RANGE}
    changes.update({field: data[key] for key, field in DIRECT_FIELDS.items() if key in data})
    used = set(DIRECT_FIELDS)
    unmapped: list[Unmapped] = []
    if "seed" in data and int(data["seed"]) < 0:
        del changes["seed"]
        unmapped.append(Unmapped("seed", data["seed"], "a random seed each time"))
    for key in TEXT_UNIT_FIELDS:
        if key in data:
            changes[key] = from_text_units(float(data[key]))
    used.update(TEXT_UNIT_FIELDS)
    if data.get("dynamic_temperature"):
        low = float(data.get("dynatemp_low", 1.0))
        high = float(data.get("dynatemp_high", 1.0))
        changes["temperature"] = float(f"{(low + high) / 2:.12g}")
        changes["dynatemp_range"] = float(f"{(high - low) / 2:.12g}")
    used.update(("dynamic_temperature", "dynatemp_low", "dynatemp_high"))
    if "dry_sequence_breakers" in data:
        changes["dry_sequence_breakers"] = _breakers(data["dry_sequence_breakers"])
    used.add("dry_sequence_breakers")
    if "sampler_priority" in data:
        words = data["sampler_priority"]
        if isinstance(words, str):
            words = [word.strip() for word in words.splitlines() if word.strip()]
        if not isinstance(words, list):
            raise PresetFormatError(f"sampler_priority is not a list of names: {words!r}")
        order, left = order_from_names(words, ORDER_NAMES, "sampler_priority", registry)
        changes["samplers"] = order
        unmapped += left
    used.add("sampler_priority")
    unmapped += leftover_fields(data, used)
    return ImportedPreset(changes, tuple(unmapped), TOOL)


def _breakers(value: Any) -> tuple[str, ...]:
    """The DRY breakers: quoted texts separated by commas ('"\\n", ":", "*"')."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    text = str(value).strip()
    try:
        found = load_yaml(f"[{text}]", "dry_sequence_breakers")
    except UserFileError:
        shown = text if len(text) <= 80 else text[:80] + "…"
        raise PresetFormatError(f"dry_sequence_breakers cannot be read: {shown!r}") from None
    if not (isinstance(found, list) and all(isinstance(item, str) for item in found)):
        raise PresetFormatError(f"dry_sequence_breakers is not a list of texts: {text!r}")
    return tuple(found)
