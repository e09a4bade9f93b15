"""KoboldCpp's sampler settings: the fields of its `/api/v1/generate` request, as
saved settings and its Lite client's exports hold them.

`typical`, `tfs`, `top_a`, `rep_pen`, `rep_pen_range`, `nsigma`, `sampler_seed`;
the chain's order is `sampler_order`, numbers: 0 top-k, 1 top-a, 2 top-p, 3
tail-free, 4 typical, 5 temperature, 6 the repetition penalty; `logit_bias` maps
token ids (as text) to biases.
"""

from __future__ import annotations

from typing import Any

from backend.config.preset_interchange import (
    ImportedPreset,
    PresetFormatError,
    Unmapped,
    leftover_fields,
    order_from_names,
)

TOOL = "koboldcpp"

DIRECT_FIELDS: dict[str, str] = {
    "temperature": "temperature",
    "top_k": "top_k",
    "top_p": "top_p",
    "top_a": "top_a",
    "typical": "typical_p",
    "tfs": "tfs",
    "min_p": "min_p",
    "rep_pen": "repeat_penalty",
    "rep_pen_range": "repeat_last_n",
    "presence_penalty": "presence_penalty",
    "mirostat": "mirostat",
    "mirostat_tau": "mirostat_tau",
    "mirostat_eta": "mirostat_eta",
    "dynatemp_range": "dynatemp_range",
    "dynatemp_exponent": "dynatemp_exponent",
    "smoothing_factor": "smoothing_factor",
    "dry_multiplier": "dry_multiplier",
    "dry_base": "dry_base",
    "dry_allowed_length": "dry_allowed_length",
    "dry_penalty_last_n": "dry_penalty_last_n",
    "xtc_threshold": "xtc_threshold",
    "xtc_probability": "xtc_probability",
    "nsigma": "top_n_sigma",
    "adaptive_target": "adaptive_target",
    "adaptive_decay": "adaptive_decay",
}
"""KoboldCpp's fields that hold a samplescope setting as it is."""

SAMPLER_IDS: dict[int, str] = {
    0: "top_k",
    1: "top_a",
    2: "top_p",
    3: "tfs",
    4: "typ_p",
    5: "temperature",
    6: "penalties",
}
"""KoboldCpp's `sampler_order` numbers."""

KOBOLD_MARKERS = ("rep_pen", "sampler_order", "typical", "sampler_seed")
"""Fields only KoboldCpp writes (SillyTavern's presets have `temp`, not these)."""


def looks_like_koboldcpp(data: dict[str, Any]) -> bool:
    """Whether a JSON preset is KoboldCpp's rather than SillyTavern's."""
    return "temp" not in data and any(key in data for key in KOBOLD_MARKERS)


def import_koboldcpp(data: dict[str, Any]) -> ImportedPreset:
    """The settings KoboldCpp's sampler fields set.

    Raises:
        PresetFormatError: A field holds a value of the wrong shape.
    """
    changes: dict[str, Any] = {
        field: data[key] for key, field in DIRECT_FIELDS.items() if key in data
    }
    used = set(DIRECT_FIELDS)
    unmapped: list[Unmapped] = []
    if "sampler_seed" in data:
        if int(data["sampler_seed"]) >= 0:
            changes["seed"] = int(data["sampler_seed"])
        else:
            unmapped.append(Unmapped("sampler_seed", data["sampler_seed"], "a random seed"))
    used.add("sampler_seed")
    if "dry_sequence_breakers" in data:
        breakers = data["dry_sequence_breakers"]
        if not (isinstance(breakers, list) and all(isinstance(b, str) for b in breakers)):
            raise PresetFormatError(f"dry_sequence_breakers is not a list of texts: {breakers!r}")
        changes["dry_sequence_breakers"] = tuple(breakers)
    used.add("dry_sequence_breakers")
    if "sampler_order" in data:
        numbers = data["sampler_order"]
        if not isinstance(numbers, list):
            raise PresetFormatError(f"sampler_order is not a list of numbers: {numbers!r}")
        words = [SAMPLER_IDS.get(int(n), f"#{n}") for n in numbers]
        order, left = order_from_names(words, {}, "sampler_order")
        changes["samplers"] = order
        unmapped += left
    used.add("sampler_order")
    if "logit_bias" in data:
        biases = data["logit_bias"]
        if not isinstance(biases, dict):
            raise PresetFormatError(f"logit_bias is not a map of token ids: {biases!r}")
        if biases:
            changes["logit_bias"] = {int(token): float(bias) for token, bias in biases.items()}
    used.add("logit_bias")
    unmapped += leftover_fields(data, used)
    return ImportedPreset(changes, tuple(unmapped), TOOL)
