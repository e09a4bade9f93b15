"""The sampler's settings: one frozen, validated record."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from sampling.errors import SettingsError

TopPScope = Literal["kept", "vocab"]
DrawMethod = Literal["inverse_cdf", "gumbel"]
RngName = Literal["pcg64", "xorshift128"]

GREEDY_TEMPERATURE = 1e-6
MAX_SEED = 2**64 - 1


@dataclass(frozen=True, slots=True)
class SamplerSettings:
    """Every knob of the sampler, validated on construction.

    The defaults are the "off" values: `SamplerSettings()` samples the model's own
    distribution at temperature 1. The app's starting point (llama.cpp's defaults) is
    `DEFAULT_CHAT_SETTINGS`.

    Attributes:
        temperature: Divides the logits; below 1e-6 (0 included) means greedy argmax.
        top_k: Keep the k most probable tokens; 0 turns it off.
        top_p: Keep the shortest most-probable prefix whose mass reaches p; 1.0 is off.
        top_p_scope: "kept" measures p after top-k renormalises; "vocab" against the
            whole-vocabulary mass (candle's TopKThenTopP).
        min_p: Keep tokens with p_i >= min_p * p_max; 0.0 is off.
        repeat_penalty: Over the last `repeat_last_n` tokens, each distinct token once:
            a positive logit is divided by it, a non-positive one multiplied.
        repeat_last_n: How many recent tokens (prompt included) the penalties see.
        frequency_penalty: Subtract count * frequency_penalty from a seen token's logit.
        presence_penalty: Subtract presence_penalty from every seen token's logit.
        temperature_last: Apply temperature after the filters (llama.cpp's order).
        draw: "inverse_cdf" (one uniform per token) or seeded "gumbel" max.
        rng: "pcg64" (numpy) or "xorshift128" (run.c's generator, id-order roulette).
        seed: The generator's seed, 0 to 2**64 - 1.
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    top_p_scope: TopPScope = "kept"
    min_p: float = 0.0
    repeat_penalty: float = 1.0
    repeat_last_n: int = 0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    temperature_last: bool = False
    draw: DrawMethod = "inverse_cdf"
    rng: RngName = "pcg64"
    seed: int = 0

    def __post_init__(self) -> None:
        _check_real("temperature", self.temperature, "a number >= 0")
        if self.temperature < 0:
            raise SettingsError("temperature", self.temperature, "a number >= 0")
        _check_int("top_k", self.top_k, "an integer >= 0 (0 is off)")
        if self.top_k < 0:
            raise SettingsError("top_k", self.top_k, "an integer >= 0 (0 is off)")
        _check_real("top_p", self.top_p, "a number in (0, 1] (1 is off)")
        if not 0.0 < self.top_p <= 1.0:
            raise SettingsError("top_p", self.top_p, "a number in (0, 1] (1 is off)")
        if self.top_p_scope not in ("kept", "vocab"):
            raise SettingsError("top_p_scope", self.top_p_scope, "'kept' or 'vocab'")
        _check_real("min_p", self.min_p, "a number in [0, 1) (0 is off)")
        if not 0.0 <= self.min_p < 1.0:
            raise SettingsError("min_p", self.min_p, "a number in [0, 1) (0 is off)")
        _check_real("repeat_penalty", self.repeat_penalty, "a number > 0 (1 is off)")
        if self.repeat_penalty <= 0:
            raise SettingsError("repeat_penalty", self.repeat_penalty, "a number > 0 (1 is off)")
        _check_int("repeat_last_n", self.repeat_last_n, "an integer >= 0")
        if self.repeat_last_n < 0:
            raise SettingsError("repeat_last_n", self.repeat_last_n, "an integer >= 0")
        _check_real("frequency_penalty", self.frequency_penalty, "a finite number")
        _check_real("presence_penalty", self.presence_penalty, "a finite number")
        if not isinstance(self.temperature_last, bool):
            raise SettingsError("temperature_last", self.temperature_last, "true or false")
        if self.draw not in ("inverse_cdf", "gumbel"):
            raise SettingsError("draw", self.draw, "'inverse_cdf' or 'gumbel'")
        if self.rng not in ("pcg64", "xorshift128"):
            raise SettingsError("rng", self.rng, "'pcg64' or 'xorshift128'")
        _check_int("seed", self.seed, f"an integer from 0 to {MAX_SEED}")
        if not 0 <= self.seed <= MAX_SEED:
            raise SettingsError("seed", self.seed, f"an integer from 0 to {MAX_SEED}")

    @property
    def greedy(self) -> bool:
        """Whether the temperature is low enough to mean argmax."""
        return self.temperature < GREEDY_TEMPERATURE

    @property
    def penalizes(self) -> bool:
        """Whether any penalty can change a logit."""
        return self.repeat_last_n > 0 and (
            self.repeat_penalty != 1.0
            or self.frequency_penalty != 0.0
            or self.presence_penalty != 0.0
        )

    def with_changes(self, **changes: Any) -> SamplerSettings:
        """Return a validated copy with some fields changed."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (JSON/TOML friendly)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SamplerSettings:
        """Build settings from a dict, rejecting unknown keys by name."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise SettingsError(unknown[0], values[unknown[0]], f"one of {sorted(known)}")
        return cls(**values)


def _check_real(name: str, value: object, expected: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SettingsError(name, value, expected)
    if not math.isfinite(value):
        raise SettingsError(name, value, expected)


def _check_int(name: str, value: object, expected: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError(name, value, expected)


DEFAULT_CHAT_SETTINGS = SamplerSettings(
    temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, repeat_last_n=64, seed=42
)
"""What the chat app and `generate` start from: llama.cpp's defaults."""
