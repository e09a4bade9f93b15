"""The model's own sampler settings: a GGUF's `general.sampling.*` keys.

A model file may say how it likes to be sampled (llama.cpp's `src/llama-arch.cpp`
names the keys). llama.cpp reads them when it loads the model
(`common_init_sampler_from_model` in `common/common.cpp`) and lets each one fill the
setting it names only where the user did not set that setting
(`user_sampling_config`); `backend.config.setting_sources.fill_from_model` does the
same with what this module reads. A key holding a value of the wrong type, not a
finite number, or out of the setting's range is left out with one line saying so.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

from backend.llama.gguf import MetaValue, read_gguf
from sampling.errors import SamplescopeError, SettingsError
from sampling.settings.record import SamplerSettings
from sampling.settings.spec import SettingValue

SAMPLING_PREFIX = "general.sampling."

#: Each key (after `general.sampling.`) and the setting it fills, in llama.cpp's order.
SAMPLING_KEYS: tuple[tuple[str, str], ...] = (
    ("sequence", "samplers"),
    ("top_k", "top_k"),
    ("top_p", "top_p"),
    ("min_p", "min_p"),
    ("xtc_probability", "xtc_probability"),
    ("xtc_threshold", "xtc_threshold"),
    ("temp", "temperature"),
    ("penalty_last_n", "repeat_last_n"),
    ("penalty_repeat", "repeat_penalty"),
    ("mirostat", "mirostat"),
    ("mirostat_tau", "mirostat_tau"),
    ("mirostat_eta", "mirostat_eta"),
)

_WHOLE_NUMBERS = frozenset({"top_k", "repeat_last_n", "mirostat"})
"""The settings llama.cpp reads as integers (`get_int32`)."""


@dataclass(frozen=True, slots=True)
class ModelSampling:
    """The settings a model file asks for.

    Attributes:
        values: (setting name, value) for each usable key, in llama.cpp's order.
        keys: The GGUF key each setting came from, by the setting's name.
        problems: One line for each key left out (its value unusable).
    """

    values: tuple[tuple[str, SettingValue], ...] = ()
    keys: Mapping[str, str] | None = None
    problems: tuple[str, ...] = ()

    def key_of(self, name: str) -> str:
        """The GGUF key of the setting `name`."""
        return (self.keys or {}).get(name, "")

    def __bool__(self) -> bool:
        return bool(self.values)


NO_MODEL_SAMPLING = ModelSampling()


def model_sampling(metadata: Mapping[str, MetaValue], base: SamplerSettings) -> ModelSampling:
    """The `general.sampling.*` keys of a model's metadata, as settings of `base`'s
    registry; each value is checked as a flag's would be.

    Args:
        metadata: The GGUF's metadata (`backend.llama.gguf.GgufFile.metadata`).
        base: Settings the values are checked against (their ranges, the order's names).
    """
    values: list[tuple[str, SettingValue]] = []
    keys: dict[str, str] = {}
    problems: list[str] = []
    for suffix, name in SAMPLING_KEYS:
        key = SAMPLING_PREFIX + suffix
        if key not in metadata:
            continue
        raw = metadata[key]
        try:
            value = _setting_value(name, raw)
            base.with_changes(**{name: value})
            if name == "samplers":  # as the order holds it: names, llama.cpp's aliases read
                value = base.registry.settings_by_name[name].coerce(value)  # type: ignore[assignment]
        except (ValueError, SettingsError) as error:
            problems.append(f"the model file's {key} = {_shown(raw)} is ignored: {error}")
            continue
        values.append((name, value))
        keys[name] = key
    return ModelSampling(tuple(values), keys, tuple(problems))


def read_model_sampling(path: str | os.PathLike[str], base: SamplerSettings) -> ModelSampling:
    """`model_sampling` of a GGUF file, read without loading it (an unreadable file
    asks for nothing: loading it says what is wrong)."""
    try:
        gguf = read_gguf(path, arrays=False)
    except SamplescopeError:
        return NO_MODEL_SAMPLING
    return model_sampling(gguf.metadata, base)


def _setting_value(name: str, raw: MetaValue) -> SettingValue:
    """A key's value as its setting holds it.

    Raises:
        ValueError: The value has the wrong type, or is not a finite number.
    """
    if name == "samplers":
        if not isinstance(raw, str):
            raise ValueError("expected sampler names as text, such as 'top_k;temperature'")
        return raw
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise ValueError("expected a number")
    if not math.isfinite(raw):
        raise ValueError("not a finite number")
    if name in _WHOLE_NUMBERS:
        if raw != int(raw):
            raise ValueError("expected a whole number")
        return int(raw)
    # llama.cpp reads the value back from its text, printed with six decimals
    # (`std::to_string`): a float32 0.95 is 0.95, not 0.949999988.
    return float(f"{raw:f}")


def _shown(raw: MetaValue) -> str:
    text = repr(raw)
    return text if len(text) <= 40 else text[:39] + "…"
