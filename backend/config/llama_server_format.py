"""llama.cpp's own spellings: llama-server / llama-cli flags (`common/arg.cpp`) and
the fields of a llama-server `/completion` request (`tools/server/README.md`).

llama.cpp has no temperature-last switch (its order says where the temperature
runs, so the order written is the one that runs), no top-a, tail-free, epsilon,
eta or smoothing sampler, no minimum length and no other draw: those are listed
when they would change anything, and left out of the order written.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from typing import Any

from backend.config.preset_interchange import (
    ImportedPreset,
    PresetFormatError,
    Unmapped,
    leftover_fields,
    order_from_names,
    plain_number,
    plugin_leftovers,
)
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.samplers.dry import DryParams
from sampling.samplers.grammar import GrammarParams
from sampling.samplers.logit_bias import LogitBiasParams
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import LLAMA_CPP_ORDER, Registry

TOOL = "llama-server"


@dataclass(frozen=True, slots=True)
class LlamaField:
    """One setting both llama.cpp and samplescope hold under their own names.

    Attributes:
        setting: samplescope's `SamplerSettings` field.
        key: The `/completion` request's field.
        flag: The llama-server / llama-cli flag.
    """

    setting: str
    key: str
    flag: str


SCALAR_FIELDS: tuple[LlamaField, ...] = (
    LlamaField("temperature", "temperature", "--temp"),
    LlamaField("top_k", "top_k", "--top-k"),
    LlamaField("top_p", "top_p", "--top-p"),
    LlamaField("min_p", "min_p", "--min-p"),
    LlamaField("typical_p", "typical_p", "--typical"),
    LlamaField("repeat_penalty", "repeat_penalty", "--repeat-penalty"),
    LlamaField("repeat_last_n", "repeat_last_n", "--repeat-last-n"),
    LlamaField("presence_penalty", "presence_penalty", "--presence-penalty"),
    LlamaField("frequency_penalty", "frequency_penalty", "--frequency-penalty"),
    LlamaField("dry_multiplier", "dry_multiplier", "--dry-multiplier"),
    LlamaField("dry_base", "dry_base", "--dry-base"),
    LlamaField("dry_allowed_length", "dry_allowed_length", "--dry-allowed-length"),
    LlamaField("dry_penalty_last_n", "dry_penalty_last_n", "--dry-penalty-last-n"),
    LlamaField("xtc_probability", "xtc_probability", "--xtc-probability"),
    LlamaField("xtc_threshold", "xtc_threshold", "--xtc-threshold"),
    LlamaField("mirostat", "mirostat", "--mirostat"),
    LlamaField("mirostat_tau", "mirostat_tau", "--mirostat-ent"),
    LlamaField("mirostat_eta", "mirostat_eta", "--mirostat-lr"),
    LlamaField("dynatemp_range", "dynatemp_range", "--dynatemp-range"),
    LlamaField("dynatemp_exponent", "dynatemp_exponent", "--dynatemp-exp"),
    LlamaField("top_n_sigma", "top_n_sigma", "--top-n-sigma"),
    LlamaField("adaptive_target", "adaptive_target", "--adaptive-target"),
    LlamaField("adaptive_decay", "adaptive_decay", "--adaptive-decay"),
    LlamaField("seed", "seed", "--seed"),
)
"""The settings llama.cpp holds as one number, in `--help`'s order."""

LLAMA_CPP_NAMES = frozenset(LLAMA_CPP_ORDER)
"""The names llama.cpp's `--samplers` knows. The others an order may hold are samplers
it lacks, sampler plugins, and adaptive-p, which llama.cpp runs last whenever
`--adaptive-target` is set."""

_UNMAPPED_SETTINGS = (
    "top_p_scope",
    "draw",
    "rng",
    "top_a",
    "tfs",
    "epsilon_cutoff",
    "eta_cutoff",
    "smoothing_factor",
    "smoothing_curve",
    "min_tokens",
    "grammar_triggers",
    "think_set",
)


def _unmapped(settings: SamplerSettings) -> list[Unmapped]:
    defaults = SamplerSettings()
    return [
        Unmapped(name, getattr(settings, name), "llama.cpp has no such setting")
        for name in _UNMAPPED_SETTINGS
        if getattr(settings, name) != getattr(defaults, name)
    ] + plugin_leftovers(settings)


def llama_order(settings: SamplerSettings) -> tuple[str, ...]:
    """The order that runs (temperature moved last when asked), in llama.cpp's names."""
    return tuple(name for name in settings.order if name in LLAMA_CPP_NAMES)


def completion_body(settings: SamplerSettings) -> tuple[dict[str, Any], list[Unmapped]]:
    """The settings as a llama-server `/completion` request's fields (no prompt)."""
    body: dict[str, Any] = {
        field.key: _plain(getattr(settings, field.setting)) for field in SCALAR_FIELDS
    }
    body["dry_sequence_breakers"] = list(settings.of(DryParams).dry_sequence_breakers)
    body["samplers"] = list(llama_order(settings))
    body["logit_bias"] = [
        [token, False if bias == -math.inf else plain_number(bias)]
        for token, bias in settings.of(LogitBiasParams).logit_bias
    ]
    if settings.of(GrammarParams).grammar:
        body["grammar"] = settings.of(GrammarParams).grammar
    if settings.of(GrammarParams).json_schema:
        try:
            body["json_schema"] = json.loads(settings.of(GrammarParams).json_schema)
        except json.JSONDecodeError:
            body["json_schema"] = settings.of(GrammarParams).json_schema
    return body, _unmapped(settings)


def server_flags(
    settings: SamplerSettings, *, seed: bool = True
) -> tuple[list[str], list[Unmapped]]:
    """The settings as llama-server / llama-cli flags, one word per item (without
    `--seed` when `seed` is False: a preset that sets none)."""
    words: list[str] = []
    for field in SCALAR_FIELDS:
        if field.setting == "seed" and not seed:
            continue
        words += [field.flag, str(_plain(getattr(settings, field.setting)))]
    breakers = settings.of(DryParams).dry_sequence_breakers or ("none",)
    for breaker in breakers:
        words += ["--dry-sequence-breaker", breaker]
    words += ["--samplers", ";".join(llama_order(settings))]
    for token, bias in settings.of(LogitBiasParams).logit_bias:
        words += ["--logit-bias", f"{token}{'+' if bias >= 0 else '-'}{abs(bias):g}"]
    if settings.of(GrammarParams).grammar:
        words += ["--grammar", settings.of(GrammarParams).grammar]
    if settings.of(GrammarParams).json_schema:
        words += ["--json-schema", settings.of(GrammarParams).json_schema]
    return words, _unmapped(settings)


def flags_text(words: list[str]) -> str:
    """Flags as one shell line, each word quoted where the shell needs it.

    A word holding a newline, a tab or another control character (DRY's default
    breaker "\\n") is written in bash's `$'…'` quoting, escaped, so that the line stays
    one line: llama.cpp takes the breaker as the shell hands it over, unescaped."""
    return " ".join(
        _ansi_c_quoted(word) if _has_control(word) else shlex.quote(word) for word in words
    )


def _has_control(word: str) -> bool:
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in word)


def _ansi_c_quoted(word: str) -> str:
    """`word` as bash's `$'…'`: backslash, quote and control characters escaped."""
    named = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    out = []
    for c in word:
        if c in named:
            out.append(named[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return "$'" + "".join(out) + "'"


def _plain(value: Any) -> Any:
    return plain_number(value) if isinstance(value, float) else value


def import_completion_body(
    data: dict[str, Any], registry: Registry = BUILT_IN_REGISTRY
) -> ImportedPreset:
    """The settings a llama-server `/completion` request's fields set.

    Raises:
        PresetFormatError: A field holds a value of the wrong shape.
    """
    changes: dict[str, Any] = {
        field.setting: data[field.key] for field in SCALAR_FIELDS if field.key in data
    }
    used = {field.key for field in SCALAR_FIELDS}
    unmapped: list[Unmapped] = []
    if "dry_sequence_breakers" in data:
        changes["dry_sequence_breakers"] = tuple(data["dry_sequence_breakers"])
    if "samplers" in data:
        order, left = order_from_names(data["samplers"], {}, "samplers", registry)
        changes["samplers"] = order
        unmapped += left
    if "logit_bias" in data:
        changes["logit_bias"] = _read_biases(data["logit_bias"])
    if isinstance(data.get("grammar"), str):
        changes["grammar"] = data["grammar"]
    schema = data.get("json_schema")
    if schema is not None:
        changes["json_schema"] = schema if isinstance(schema, str) else json.dumps(schema)
    used.update(("dry_sequence_breakers", "samplers", "logit_bias", "grammar", "json_schema"))
    unmapped += leftover_fields(data, used, "not a sampler setting samplescope holds")
    return ImportedPreset(changes, tuple(unmapped), TOOL)


def _read_biases(value: Any) -> dict[int, float]:
    """`[[id, bias], ...]` (false bans) or `{"id": bias}`."""
    pairs = value.items() if isinstance(value, dict) else value
    if not isinstance(pairs, list) and not isinstance(value, dict):
        raise PresetFormatError(f"logit_bias is not a list of [token, bias]: {value!r}")
    biases: dict[int, float] = {}
    for pair in pairs:
        token, bias = pair
        biases[int(token)] = -math.inf if bias is False else float(bias)
    return biases


def import_server_flags(words: list[str]) -> ImportedPreset:
    """The settings llama-server / llama-cli sampling flags set (as `server_flags`
    writes them: every flag followed by its value).

    Raises:
        PresetFormatError: A flag lacks its value or its value cannot be read.
    """
    by_flag = {field.flag: field for field in SCALAR_FIELDS}
    changes: dict[str, Any] = {}
    breakers: list[str] = []
    biases: dict[int, float] = {}
    unmapped: list[Unmapped] = []
    if len(words) % 2:
        raise PresetFormatError(
            f"a flag lacks its value: {len(words)} words, not flag and value pairs"
            f" (the last is {words[-1]!r})"
        )
    for flag, text in zip(words[::2], words[1::2], strict=True):
        try:
            if flag in by_flag:
                setting = by_flag[flag].setting
                number = float(text)
                changes[setting] = (
                    int(number) if number.is_integer() and "." not in text else number
                )
            elif flag == "--dry-sequence-breaker":
                breakers += [] if text == "none" else [text]
            elif flag == "--samplers":
                changes["samplers"], left = order_from_names(text.split(";"), {}, "samplers")
                unmapped += left
            elif flag == "--logit-bias":
                at = max(text.rfind("+"), text.rfind("-"))
                biases[int(text[:at])] = float(text[at:])
            elif flag in ("--grammar", "--json-schema"):
                changes[flag[2:].replace("-", "_")] = text
            else:
                unmapped.append(Unmapped(flag, text, "not a sampling flag samplescope holds"))
        except (ValueError, OverflowError):
            raise PresetFormatError(f"{flag!r} {text!r}: not a value it takes") from None
    if "--dry-sequence-breaker" in words:
        changes["dry_sequence_breakers"] = tuple(breakers)
    if biases:
        changes["logit_bias"] = biases
    return ImportedPreset(changes, tuple(unmapped), TOOL)
