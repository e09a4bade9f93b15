"""SillyTavern's text-completion presets (`default/content/presets/textgen/*.json`).

The fields are SillyTavern's: `temp`, `rep_pen`, `rep_pen_range`, `freq_pen`,
`presence_pen`, `mirostat_mode`, `nsigma`, the dynamic temperature as `dynatemp`
with `min_temp` / `max_temp`, the DRY breakers as a JSON list in a string, the
epsilon and eta cutoffs in units of 1e-4, the chain's order twice: `samplers` in
llama.cpp's names (read and written here) and `sampler_priority` in
text-generation-webui's, and logit biases as entries whose `text` is a token's text
or its ids in brackets ("[42]"; only those map).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from backend.config.preset_interchange import (
    ImportedPreset,
    PresetFormatError,
    Unmapped,
    from_text_units,
    leftover_fields,
    order_from_names,
    plain_number,
    plugin_leftovers,
    to_text_units,
)
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.samplers.dry import DryParams
from sampling.samplers.logit_bias import LogitBiasParams
from sampling.samplers.temperature import TemperatureParams
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry

TOOL = "sillytavern"

DIRECT_FIELDS: dict[str, str] = {
    "temp": "temperature",
    "temperature_last": "temperature_last",
    "top_p": "top_p",
    "top_k": "top_k",
    "top_a": "top_a",
    "tfs": "tfs",
    "typical_p": "typical_p",
    "min_p": "min_p",
    "rep_pen": "repeat_penalty",
    "rep_pen_range": "repeat_last_n",
    "freq_pen": "frequency_penalty",
    "presence_pen": "presence_penalty",
    "dynatemp_exponent": "dynatemp_exponent",
    "smoothing_factor": "smoothing_factor",
    "smoothing_curve": "smoothing_curve",
    "dry_allowed_length": "dry_allowed_length",
    "dry_multiplier": "dry_multiplier",
    "dry_base": "dry_base",
    "dry_penalty_last_n": "dry_penalty_last_n",
    "mirostat_mode": "mirostat",
    "mirostat_tau": "mirostat_tau",
    "mirostat_eta": "mirostat_eta",
    "xtc_threshold": "xtc_threshold",
    "xtc_probability": "xtc_probability",
    "nsigma": "top_n_sigma",
}
"""SillyTavern's fields that hold a samplescope setting as it is."""

TEXT_UNIT_FIELDS = ("epsilon_cutoff", "eta_cutoff")
"""Cutoffs SillyTavern gives in units of 1e-4."""

ORDER_NAMES: dict[str, str | None] = {"typical_p": "typ_p", "tfs_z": "tfs"}
"""llama.cpp's sampler names as SillyTavern writes them in `samplers`."""

EXPORT_ORDER_NAMES = {"typ_p": "typical_p", "tfs": "tfs_z"}

BAN_BIAS = -100.0
"""SillyTavern's strongest bias: what a ban (-inf) is written as."""

_TOKEN_IDS = re.compile(r"^\s*\[\s*(\d+)\s*\]\s*$")


def import_sillytavern(
    data: dict[str, Any], registry: Registry = BUILT_IN_REGISTRY
) -> ImportedPreset:
    """The settings a SillyTavern text-completion preset sets.

    Raises:
        PresetFormatError: A field holds a value of the wrong shape.
    """
    changes: dict[str, Any] = {
        field: data[key] for key, field in DIRECT_FIELDS.items() if key in data
    }
    used = set(DIRECT_FIELDS)
    unmapped: list[Unmapped] = []
    for key in TEXT_UNIT_FIELDS:
        if key in data:
            changes[key] = from_text_units(float(data[key]))
    used.update(TEXT_UNIT_FIELDS)
    if "seed" in data:
        if int(data["seed"]) >= 0:
            changes["seed"] = int(data["seed"])
        else:
            unmapped.append(Unmapped("seed", data["seed"], "a random seed each time"))
    used.add("seed")
    _read_dynatemp(data, changes)
    used.update(("dynatemp", "min_temp", "max_temp"))
    if "dry_sequence_breakers" in data:
        changes["dry_sequence_breakers"] = _breakers(data["dry_sequence_breakers"])
    used.add("dry_sequence_breakers")
    if isinstance(data.get("samplers"), list):
        order, left = order_from_names(data["samplers"], ORDER_NAMES, "samplers", registry)
        changes["samplers"] = order
        unmapped += left
        used.add("samplers")
    if "logit_bias" in data:
        pairs, left = _biases(data["logit_bias"])
        if pairs:
            changes["logit_bias"] = pairs
        unmapped += left
    used.add("logit_bias")
    unmapped += leftover_fields(data, used)
    return ImportedPreset(changes, tuple(unmapped), TOOL)


def _read_dynatemp(data: dict[str, Any], changes: dict[str, Any]) -> None:
    """SillyTavern's dynamic temperature, from `min_temp` to `max_temp`, as the
    temperature at its middle +- a range."""
    if not data.get("dynatemp"):
        if "dynatemp" in data:
            changes["dynatemp_range"] = 0.0
        return
    low, high = float(data.get("min_temp", 0.0)), float(data.get("max_temp", 2.0))
    changes["temperature"] = float(f"{(low + high) / 2:.12g}")
    changes["dynatemp_range"] = float(f"{(high - low) / 2:.12g}")


def _breakers(value: Any) -> tuple[str, ...]:
    """The DRY breakers: a JSON list, or a string holding one."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as error:
            raise PresetFormatError(
                f"dry_sequence_breakers is not a JSON list of texts: {value!r}"
            ) from error
    if not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
        raise PresetFormatError(f"dry_sequence_breakers is not a list of texts: {value!r}")
    return tuple(value)


def _biases(entries: Any) -> tuple[tuple[tuple[int, float], ...], list[Unmapped]]:
    """The biases given by token id ("[42]"); those given as text are listed."""
    if not isinstance(entries, list):
        raise PresetFormatError(f"logit_bias is not a list of entries: {entries!r}")
    pairs: dict[int, float] = {}
    unmapped: list[Unmapped] = []
    for entry in entries:
        text = str(entry.get("text", "")) if isinstance(entry, dict) else ""
        match = _TOKEN_IDS.match(text)
        if match is None:
            unmapped.append(
                Unmapped("logit_bias", entry, "given as text: samplescope needs a token id")
            )
            continue
        pairs[int(match.group(1))] = float(entry.get("value", 0.0))
    return tuple(sorted(pairs.items())), unmapped


def export_sillytavern(settings: SamplerSettings) -> tuple[dict[str, Any], list[Unmapped]]:
    """The settings as a SillyTavern text-completion preset, and what it cannot hold."""
    preset: dict[str, Any] = {
        key: _plain(getattr(settings, field)) for key, field in DIRECT_FIELDS.items()
    }
    for key in TEXT_UNIT_FIELDS:
        preset[key] = plain_number(to_text_units(getattr(settings, key)))
    preset["seed"] = settings.seed
    temperature, spread = (
        settings.of(TemperatureParams).temperature,
        settings.of(TemperatureParams).dynatemp_range,
    )
    preset["dynatemp"] = spread > 0.0
    preset["min_temp"] = plain_number(float(f"{max(temperature - spread, 0.0):.12g}"))
    preset["max_temp"] = plain_number(float(f"{temperature + spread:.12g}"))
    preset["dry_sequence_breakers"] = json.dumps(list(settings.of(DryParams).dry_sequence_breakers))
    preset["samplers"] = [EXPORT_ORDER_NAMES.get(name, name) for name in settings.samplers]
    unmapped: list[Unmapped] = []
    preset["logit_bias"] = []
    for token, bias in settings.of(LogitBiasParams).logit_bias:
        if math.isinf(bias):
            unmapped.append(
                Unmapped("logit_bias", f"{token}={bias}", f"a ban, written as {BAN_BIAS:g}")
            )
            bias = BAN_BIAS if bias < 0 else -BAN_BIAS
        preset["logit_bias"].append({"text": f"[{token}]", "value": plain_number(bias)})
    unmapped += _export_leftovers(settings)
    return preset, unmapped


def _plain(value: Any) -> Any:
    return plain_number(value) if isinstance(value, float) else value


def _export_leftovers(settings: SamplerSettings) -> list[Unmapped]:
    """samplescope's settings SillyTavern has no field for, when not at their default."""
    defaults = SamplerSettings()
    names = (
        "top_p_scope",
        "draw",
        "rng",
        "min_tokens",
        "adaptive_target",
        "adaptive_decay",
        "grammar",
        "json_schema",
        "grammar_triggers",
        "think_set",
    )
    return [
        Unmapped(name, getattr(settings, name), "no SillyTavern field")
        for name in names
        if getattr(settings, name) != getattr(defaults, name)
    ] + plugin_leftovers(settings)
