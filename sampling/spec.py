"""Each sampler setting declared once: its type, range, off value, flag and control.

`SETTINGS` holds one `SettingSpec` per `SamplerSettings` field, in field order, and
everything else is derived from it: the record's validation, every command's flags,
the sampling panel's sliders and toggles, the compare view's fields and `--set` keys,
and `settings_summary` (in `sampling.settings`). Adding a setting is one entry here
(and its sampler).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from sampling.errors import SettingsError

SettingKind = Literal["float", "int", "bool", "choice"]
SettingValue = bool | int | float | str

GREEDY_TEMPERATURE = 1e-6
MAX_SEED = 2**64 - 1
_TRUE_WORDS = ("true", "yes", "on", "1")
_FALSE_WORDS = ("false", "no", "off", "0")


@dataclass(frozen=True, slots=True)
class SliderRange:
    """How a numeric setting's slider moves.

    Attributes:
        soft_min: The bar's left end.
        soft_max: The bar's right end.
        hard_min: The lowest value the keys may reach (a valid value).
        hard_max: The highest value the keys may reach (a valid value; beyond
            `soft_max` the bar shows full).
        fine: The fine step (arrow keys).
        coarse: The coarse step (shift+arrows, page up/down).
    """

    soft_min: float
    soft_max: float
    hard_min: float
    hard_max: float
    fine: float
    coarse: float


@dataclass(frozen=True, slots=True)
class SettingSpec:
    """Everything samplescope knows about one sampler setting.

    Attributes:
        name: The `SamplerSettings` field.
        kind: "float", "int", "bool" or "choice".
        default: The field's value in `SamplerSettings()`.
        label: Its name on screen (at most 12 characters: the controls' label width).
        help: One line for `--help`.
        off: The value that switches it off, or None when none does (temperature, seed).
        minimum: The lowest valid number, or None for no lower bound.
        minimum_open: Whether `minimum` itself is invalid.
        maximum: The highest valid number, or None for no upper bound.
        maximum_open: Whether `maximum` itself is invalid.
        choices: For "bool" and "choice": each valid value and the text shown for it.
        slider: For numbers: the slider's span, limits and steps.
        short_key: Its key in `--set "t=0.8"` and in the active summary (default: name).
        short_flag: Its one-letter flag ("-t"), if any.
        summary_key: For a bool: the word the active summary shows when it is on.
        fixed_key: Its key in the fixed summary, or None when it is not part of it.
        needs: The setting that must be on for this one to change anything (the
            summary leaves it out otherwise), or None.
        per_column: Whether compare columns may differ in it (every column shares
            one seed).
        variations: The values "Compare: vary <field>" offers, or () for none.
    """

    name: str
    kind: SettingKind
    default: SettingValue
    label: str
    help: str
    off: SettingValue | None = None
    minimum: float | None = None
    minimum_open: bool = False
    maximum: float | None = None
    maximum_open: bool = False
    choices: tuple[tuple[SettingValue, str], ...] = ()
    slider: SliderRange | None = None
    short_key: str | None = None
    short_flag: str | None = None
    summary_key: str | None = None
    fixed_key: str | None = None
    needs: str | None = None
    per_column: bool = True
    variations: tuple[SettingValue, ...] = ()

    @property
    def is_number(self) -> bool:
        """Whether it is a float or an integer (a slider), not a switch (a toggle)."""
        return self.kind in ("float", "int")

    @property
    def flag(self) -> str:
        """Its long command-line flag: the field name with dashes."""
        return "--" + self.name.replace("_", "-")

    @property
    def key(self) -> str:
        """Its key in `--set` and in the active summary."""
        return self.short_key or self.name

    @property
    def choice_values(self) -> tuple[SettingValue, ...]:
        """The valid values of a bool or choice, in the order shown."""
        return tuple(value for value, _ in self.choices)

    @property
    def expected(self) -> str:
        """What a valid value looks like, for error messages: "a number in (0, 1]"."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            quoted = [repr(value) for value in self.choice_values]
            return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
        if self.kind == "int":
            noun = "an integer"
        elif self.minimum is None and self.maximum is None:
            noun = "a finite number"
        else:
            noun = "a number"
        text = f"{noun} {self._range_text()}".rstrip()
        if self.off is not None:
            text += f" ({_number_text(self.off)} is off)"
        return text

    def _range_text(self) -> str:
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            if self.kind == "int" and not (self.minimum_open or self.maximum_open):
                return f"from {_number_text(low)} to {_number_text(high)}"
            left = "(" if self.minimum_open else "["
            right = ")" if self.maximum_open else "]"
            return f"in {left}{_number_text(low)}, {_number_text(high)}{right}"
        if low is not None:
            return f"{'>' if self.minimum_open else '>='} {_number_text(low)}"
        if high is not None:
            return f"{'<' if self.maximum_open else '<='} {_number_text(high)}"
        return ""

    def accepts(self, value: object) -> bool:
        """Whether `value` is valid for this setting (its type and its range)."""
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.kind == "choice":
            return isinstance(value, str) and value in self.choice_values
        if isinstance(value, bool):  # a bool is an int to Python, never a number here
            return False
        if self.kind == "int":
            if not isinstance(value, int):
                return False
        elif not isinstance(value, int | float) or not math.isfinite(value):
            return False
        return self._in_range(value)

    def _in_range(self, value: float) -> bool:
        low, high = self.minimum, self.maximum
        if low is not None and (value <= low if self.minimum_open else value < low):
            return False
        return not (high is not None and (value >= high if self.maximum_open else value > high))

    def check(self, value: object) -> None:
        """Raise unless `value` is valid.

        Raises:
            SettingsError: Naming the field, the value and what was expected.
        """
        if not self.accepts(value):
            raise SettingsError(self.name, value, self.expected)

    def parse(self, text: str) -> SettingValue:
        """Read a typed value ("0.8", "40", "true", "gumbel") as this setting's type.

        The range is not checked here: `SamplerSettings` does that on construction.

        Raises:
            SettingsError: The text cannot be read as the setting's type.
        """
        stripped = text.strip()
        if self.kind == "choice":
            return stripped
        if self.kind == "bool":
            lowered = stripped.lower()
            if lowered in _TRUE_WORDS or lowered in _FALSE_WORDS:
                return lowered in _TRUE_WORDS
            raise SettingsError(self.name, text, self.expected)
        try:
            return int(stripped) if self.kind == "int" else float(stripped)
        except ValueError:
            raise SettingsError(self.name, text, self.expected) from None

    def coerce(self, value: object) -> object:
        """A typed text parsed (see `parse`), an integer for a float made a float.

        Anything else is returned as it is, for `SamplerSettings` to judge.
        """
        if isinstance(value, str):
            return self.parse(value)
        if self.kind == "float" and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value


def _number_text(value: SettingValue) -> str:
    """A bound or off value as written in messages: 0, 1, 0.5, 18446744073709551615."""
    return f"{value:g}" if isinstance(value, float) else str(value)


SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "temperature",
        "float",
        default=1.0,
        label="temperature",
        help="temperature; 0 is greedy",
        minimum=0.0,
        slider=SliderRange(0.0, 2.0, hard_min=0.0, hard_max=100.0, fine=0.01, coarse=0.1),
        short_key="t",
        short_flag="-t",
        fixed_key="T",
        variations=(0.5, 0.8, 1.2, 1.5),
    ),
    SettingSpec(
        "top_k",
        "int",
        default=0,
        off=0,
        label="top-k",
        help="keep the k most probable tokens; 0 is off",
        minimum=0,
        slider=SliderRange(0, 100, hard_min=0, hard_max=1_000_000, fine=1, coarse=10),
        short_key="k",
        short_flag="-k",
        fixed_key="k",
        variations=(1, 10, 40, 0),
    ),
    SettingSpec(
        "top_p",
        "float",
        default=1.0,
        off=1.0,
        label="top-p",
        help="nucleus: keep the mass p; 1 is off",
        minimum=0.0,
        minimum_open=True,
        maximum=1.0,
        slider=SliderRange(0.01, 1.0, hard_min=0.01, hard_max=1.0, fine=0.01, coarse=0.05),
        short_key="p",
        short_flag="-p",
        fixed_key="p",
        variations=(0.5, 0.8, 0.95, 1.0),
    ),
    SettingSpec(
        "top_p_scope",
        "choice",
        default="kept",
        off="kept",
        label="top-p scope",
        help="measure p after top-k renormalises, or on the vocabulary",
        choices=(("kept", "kept"), ("vocab", "vocab")),
        needs="top_p",
    ),
    SettingSpec(
        "min_p",
        "float",
        default=0.0,
        off=0.0,
        label="min-p",
        help="keep p >= min_p * p_max; 0 is off",
        minimum=0.0,
        maximum=1.0,
        maximum_open=True,
        slider=SliderRange(0.0, 0.99, hard_min=0.0, hard_max=0.99, fine=0.01, coarse=0.05),
        fixed_key="min-p",
        variations=(0.0, 0.05, 0.1, 0.2),
    ),
    SettingSpec(
        "repeat_penalty",
        "float",
        default=1.0,
        off=1.0,
        label="rep. penalty",
        help="repeat penalty; 1 is off",
        minimum=0.0,
        minimum_open=True,
        slider=SliderRange(0.5, 2.0, hard_min=0.5, hard_max=10.0, fine=0.01, coarse=0.1),
        short_key="rep",
        fixed_key="rep",
        needs="repeat_last_n",
        variations=(1.0, 1.1, 1.3, 1.5),
    ),
    SettingSpec(
        "repeat_last_n",
        "int",
        default=0,
        off=0,
        label="rep. last-n",
        help="tokens the penalties see; 0 is off",
        minimum=0,
        slider=SliderRange(0, 512, hard_min=0, hard_max=1_000_000, fine=1, coarse=16),
    ),
    SettingSpec(
        "frequency_penalty",
        "float",
        default=0.0,
        off=0.0,
        label="freq penalty",
        help="subtract count * f",
        slider=SliderRange(-2.0, 2.0, hard_min=-2.0, hard_max=2.0, fine=0.01, coarse=0.1),
        short_key="freq",
        needs="repeat_last_n",
    ),
    SettingSpec(
        "presence_penalty",
        "float",
        default=0.0,
        off=0.0,
        label="pres penalty",
        help="subtract it once if seen",
        slider=SliderRange(-2.0, 2.0, hard_min=-2.0, hard_max=2.0, fine=0.01, coarse=0.1),
        short_key="pres",
        needs="repeat_last_n",
    ),
    SettingSpec(
        "temperature_last",
        "bool",
        default=False,
        off=False,
        label="temperature",
        help="apply temperature after the filters",
        choices=((False, "first"), (True, "last")),
        summary_key="t-last",
        needs="temperature",
    ),
    SettingSpec(
        "draw",
        "choice",
        default="inverse_cdf",
        off="inverse_cdf",
        label="draw",
        help="how a token is drawn",
        choices=(("inverse_cdf", "inverse cdf"), ("gumbel", "gumbel")),
    ),
    SettingSpec(
        "rng",
        "choice",
        default="pcg64",
        off="pcg64",
        label="rng",
        help="random generator (xorshift128 reproduces run.c)",
        choices=(("pcg64", "pcg64"), ("xorshift128", "xorshift128")),
    ),
    SettingSpec(
        "seed",
        "int",
        default=0,
        label="seed",
        help="random seed, 0 .. 2**64-1",
        minimum=0,
        maximum=MAX_SEED,
        slider=SliderRange(0, 99_999, hard_min=0, hard_max=MAX_SEED, fine=1, coarse=1000),
        short_flag="-s",
        per_column=False,
    ),
)
"""One entry per `SamplerSettings` field, in field order."""

SETTINGS_BY_NAME: dict[str, SettingSpec] = {spec.name: spec for spec in SETTINGS}

DISPLAY_ORDER: tuple[SettingSpec, ...] = tuple(s for s in SETTINGS if s.is_number) + tuple(
    s for s in SETTINGS if not s.is_number
)
"""Numbers first, then switches, each in field order: how the panel and forms list them."""


def find_setting(key: str) -> SettingSpec | None:
    """The setting a key names: a short key ("t"), a field name, or one with dashes."""
    for spec in SETTINGS:
        if key == spec.short_key:
            return spec
    return SETTINGS_BY_NAME.get(key.replace("-", "_"))
