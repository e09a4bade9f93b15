"""What samplescope knows about one sampler setting: `SettingSpec` and its kinds.

The table of every setting is the registry's (`sampling.settings.registry.Registry.settings`).
Besides numbers, switches and choices, three kinds hold several values: "order" (the
chain's sampler names), "bias" (token id → logit bias pairs) and "texts" (DRY's
sequence breakers); their text forms are read and written by `parse` and `format`
(see `sampling.settings.text`).
One kind holds a text as it is: "text" (a grammar, a JSON schema).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from sampling.errors import SettingsError
from sampling.settings.text import (
    accepts_bias,
    accepts_texts,
    format_bias,
    format_order,
    format_texts,
    normal_bias,
    order_problem,
    parse_bias,
    parse_order,
    parse_texts,
)

SettingKind = Literal["float", "int", "bool", "choice", "order", "bias", "texts", "text"]
SettingValue = bool | int | float | str | tuple[Any, ...]
SCALAR_KINDS: tuple[SettingKind, ...] = ("float", "int", "bool", "choice")

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
        kind: "float", "int", "bool", "choice", or one of the several-valued kinds
            "order", "bias" and "texts", or "text" (one text kept as given).
        group: The panel group it belongs to ("core", "penalties", "dry", "xtc",
            "typical", "dynatemp", "mirostat", "bias", "order").
        default: The field's value in `SamplerSettings()`.
        label: Its name on screen (at most 12 characters: the controls' label width).
        help: One line for `--help`.
        off: The value that switches it off, or None when none does (temperature, seed).
        off_at_or_below: Every value at or below this one is off too (top-n-sigma), or
            None.
        off_below: Every value below this one is off too (adaptive-p's negative
            targets), or None.
        minimum: The lowest valid number, or None for no lower bound.
        minimum_open: Whether `minimum` itself is invalid.
        maximum: The highest valid number, or None for no upper bound.
        maximum_open: Whether `maximum` itself is invalid.
        choices: For "bool" and "choice": each valid value and the text shown for it;
            for "order": each sampler an order may name, and its label.
        leading: For "order": the samplers that must come before every other.
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
        patterns: For "texts": they are regexes (a comma inside a group, a repeat
            count or a class, or escaped, does not separate them; backslashes kept).
        rank: Where the flags, the summary, the forms and `to_dict` list it among the
            settings: the settings that have a rank come first, lowest first; the
            others follow in the registry's order (a new unit's need none).
        verbatim: For "text": read exactly as given, its spaces included (text the
            model is made to write), rather than stripped.
    """

    name: str
    kind: SettingKind
    default: SettingValue
    label: str
    help: str
    group: str = "core"
    off: SettingValue | None = None
    off_at_or_below: float | None = None
    off_below: float | None = None
    minimum: float | None = None
    minimum_open: bool = False
    maximum: float | None = None
    maximum_open: bool = False
    choices: tuple[tuple[SettingValue, str], ...] = ()
    leading: tuple[str, ...] = ()
    slider: SliderRange | None = None
    short_key: str | None = None
    short_flag: str | None = None
    summary_key: str | None = None
    fixed_key: str | None = None
    needs: str | None = None
    per_column: bool = True
    variations: tuple[SettingValue, ...] = ()
    patterns: bool = False
    rank: int | None = None
    verbatim: bool = False

    @property
    def is_number(self) -> bool:
        """Whether it is a float or an integer (a slider), not a switch (a toggle)."""
        return self.kind in ("float", "int")

    @property
    def is_scalar(self) -> bool:
        """Whether it holds one value (a number, switch or choice), not several."""
        return self.kind in SCALAR_KINDS

    def is_off(self, value: object) -> bool:
        """Whether `value` switches this setting off (never, when it has no off value)."""
        if self.off is not None and value == self.off:
            return True
        if not isinstance(value, int | float):
            return False
        if self.off_below is not None and value < self.off_below:
            return True
        return self.off_at_or_below is not None and value <= self.off_at_or_below

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
        if self.kind == "order":
            return (
                "sampler names as 'top_k;temperature' (';' or ',') or a tuple of them, "
                f"each once, {' and '.join(self.leading)} first"
            )
        if self.kind == "bias":
            return (
                "token=bias pairs such as '42=+2;17=-inf', a {42: 2.0} dict or (id, bias) "
                "pairs in any order (ids at least 0, each once; bias finite or -inf)"
            )
        if self.kind == "texts":
            return "non-empty texts, as a JSON list or separated by ','"
        if self.kind == "text":
            return "a text"
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
        if self.kind == "order":
            return self.order_problem(value) is None
        if self.kind == "bias":
            return accepts_bias(value)
        if self.kind == "texts":
            return accepts_texts(value)
        if self.kind == "text":
            return isinstance(value, str)
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

    def order_problem(self, value: object) -> str | None:
        """For "order": why `value` is not a valid order, or None when it is."""
        names = [str(name) for name in self.choice_values]
        return order_problem(value, names, self.leading)

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
        if self.kind == "text":
            return text if self.verbatim else text.strip()
        stripped = text.strip()
        if self.kind == "choice":
            return stripped
        if self.kind in ("order", "bias", "texts"):
            try:
                if self.kind == "order":
                    names = [str(name) for name in self.choice_values]
                    return parse_order(text, names, self.leading)
                if self.kind == "bias":
                    return parse_bias(text)
                return parse_texts(text, patterns=self.patterns)
            except ValueError as error:
                raise SettingsError(self.name, text, f"{self.expected}: {error}") from None
        if self.kind == "bool":
            lowered = stripped.lower()
            if lowered in _TRUE_WORDS or lowered in _FALSE_WORDS:
                return lowered in _TRUE_WORDS
            raise SettingsError(self.name, text, self.expected)
        try:
            return int(stripped) if self.kind == "int" else float(stripped)
        except ValueError:
            raise SettingsError(self.name, text, self.expected) from None

    def format(self, value: SettingValue) -> str:
        """The value as text that `parse` reads back ("0.8", "true", "top_k;min_p")."""
        if self.kind == "order":
            return format_order(value)
        if self.kind == "bias":
            return format_bias(value)
        if self.kind == "texts":
            return format_texts(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    def coerce(self, value: object) -> object:
        """A typed text parsed (see `parse`), an integer for a float made a float.

        A list (read from JSON or TOML) becomes the tuple a several-valued kind
        holds; a logit bias may also be a {token id: bias} dict or pairs in any order
        (they are put in id order). Anything else is returned as it is, for
        `SamplerSettings` to judge.

        Raises:
            SettingsError: A text cannot be read, or a logit bias names a token twice.
        """
        if isinstance(value, str):
            return self.parse(value)
        if self.kind == "bias":
            try:
                return normal_bias(value)
            except ValueError as error:
                raise SettingsError(self.name, value, f"{self.expected}: {error}") from None
        if isinstance(value, list | tuple) and not self.is_scalar:
            return tuple(value)
        if self.kind == "float" and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value


def _number_text(value: SettingValue) -> str:
    """A bound or off value as written in messages: 0, 1, 0.5, 18446744073709551615."""
    return f"{value:g}" if isinstance(value, float) else str(value)
