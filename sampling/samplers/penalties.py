"""Penalties: repeat, frequency and presence penalties over the last-n window.

llama.cpp's `penalties` sampler, and its arithmetic (`penalized_logits`): every
distinct token of the window penalised once by the repeat penalty, then by its count
times the frequency penalty plus the presence penalty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt

from sampling.candidates import Candidates
from sampling.errors import LogitsError
from sampling.logits import History, within_float64_span
from sampling.samplers.base import SummaryStyle, declared_summary
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import IN_ORDER, Placement
from sampling.settings.spec import SettingSpec, SliderRange

if TYPE_CHECKING:
    from sampling.settings.record import SamplerSettings


@dataclass(frozen=True, slots=True)
class PenaltiesParams:
    """Penalties's parameters, one field per setting.

    Attributes:
        repeat_penalty: Over the last `repeat_last_n` tokens, each distinct token once:
            a positive logit is divided by it, a non-positive one multiplied.
        repeat_last_n: How many recent tokens (prompt included) the penalties see.
        frequency_penalty: Subtract count * frequency_penalty from a seen token's logit.
        presence_penalty: Subtract presence_penalty from every seen token's logit.
    """

    repeat_penalty: float = setting(
        SettingSpec(
            "repeat_penalty",
            "float",
            rank=60,
            default=1.0,
            group="penalties",
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
        )
    )
    repeat_last_n: int = setting(
        SettingSpec(
            "repeat_last_n",
            "int",
            rank=70,
            default=0,
            group="penalties",
            off=0,
            label="rep. last-n",
            help="tokens the penalties see; 0 is off",
            minimum=0,
            slider=SliderRange(0, 512, hard_min=0, hard_max=1_000_000, fine=1, coarse=16),
        )
    )
    frequency_penalty: float = setting(
        SettingSpec(
            "frequency_penalty",
            "float",
            rank=80,
            default=0.0,
            group="penalties",
            off=0.0,
            label="freq penalty",
            help="subtract count * f",
            slider=SliderRange(-2.0, 2.0, hard_min=-2.0, hard_max=2.0, fine=0.01, coarse=0.1),
            short_key="freq",
            needs="repeat_last_n",
        )
    )
    presence_penalty: float = setting(
        SettingSpec(
            "presence_penalty",
            "float",
            rank=90,
            default=0.0,
            group="penalties",
            off=0.0,
            label="pres penalty",
            help="subtract it once if seen",
            slider=SliderRange(-2.0, 2.0, hard_min=-2.0, hard_max=2.0, fine=0.01, coarse=0.1),
            short_key="pres",
            needs="repeat_last_n",
        )
    )

    @property
    def penalizes(self) -> bool:
        """Whether any penalty can change a logit."""
        return self.repeat_last_n > 0 and (
            self.repeat_penalty != 1.0
            or self.frequency_penalty != 0.0
            or self.presence_penalty != 0.0
        )


_LARGEST_FLOAT64 = float(np.finfo(np.float64).max)


def penalty_window(history: History, settings: SamplerSettings) -> npt.NDArray[np.int64]:
    """The last `repeat_last_n` token ids of `history` as an int64 array.

    Raises:
        LogitsError: The history is not a sequence, or its window holds something
            other than integer token ids (a float, NaN, a string, None, an integer
            beyond int64).
    """
    return _window(history, settings.of(PenaltiesParams).repeat_last_n)


def _window(history: History, repeat_last_n: int) -> npt.NDArray[np.int64]:
    """`penalty_window` for a window of `repeat_last_n` tokens."""
    if isinstance(history, str | bytes) or not hasattr(history, "__len__"):
        raise LogitsError(
            f"the history must be a sequence of token ids, not {type(history).__name__}"
        )
    if repeat_last_n == 0 or len(history) == 0:
        return np.empty(0, dtype=np.int64)
    window = history[-min(repeat_last_n, len(history)) :]
    try:
        array = np.asarray(window)
    except (TypeError, ValueError, OverflowError):
        array = np.asarray(window, dtype=object)
    if array.ndim != 1:
        raise LogitsError(
            f"the history must be a flat sequence of token ids, got shape {array.shape}"
        )
    integral = array.dtype.kind == "i" or (array.dtype.kind == "u" and array.max() <= _INT64_MAX)
    # numpy reads [0, False] as integers: a bool among ints is no token id either.
    if integral and (isinstance(window, np.ndarray) or bool not in map(type, window)):
        return array.astype(np.int64, copy=False)
    if array.dtype.kind == "u" and not integral:
        bad: object = int(array.max())
    else:
        items = array.tolist() if isinstance(window, np.ndarray) else list(window)
        bad = next((item for item in items if not _is_token_id(item)), None)
        if array.dtype.kind == "f":
            # A float array: name its first NaN or fraction, else its first value.
            bad = next((item for item in items if not float(item).is_integer()), items[0])
    raise LogitsError(f"the history must hold integer token ids; it holds {bad!r}")


_INT64_MAX = int(np.iinfo(np.int64).max)


def _is_token_id(value: object) -> bool:
    """Whether `value` is a plain integer that fits in int64 (a bool is not)."""
    return (
        isinstance(value, int | np.integer)
        and not isinstance(value, bool)
        and -_INT64_MAX - 1 <= int(value) <= _INT64_MAX
    )


def penalized_logits(
    logits: npt.NDArray[np.floating],
    settings: SamplerSettings,
    history: History,
) -> npt.NDArray[np.floating]:
    """The logits after the penalties, as a new array (the input is never changed).

    Every distinct token of the window is penalised once by `repeat_penalty` (a
    positive logit divided, a non-positive one multiplied, as llama.cpp and candle
    do), then `count * frequency_penalty + presence_penalty` is subtracted.
    Returns `logits` itself when no penalty applies. The penalised logits are kept
    within the finite range of the logits' type: an extreme penalty (a repeat
    penalty of 1e-300, a presence penalty of -1e39) pins a logit at the largest
    finite value rather than making it infinite, so every figure of the step stays
    a number.

    Raises:
        LogitsError: A history token id lies outside the vocabulary.
    """
    return _penalized(logits, settings.of(PenaltiesParams), history)


def _penalized(
    logits: npt.NDArray[np.floating], params: PenaltiesParams, history: History
) -> npt.NDArray[np.floating]:
    """`penalized_logits` under the penalties' parameter record."""
    if not params.penalizes:
        return logits
    window = _window(history, params.repeat_last_n)
    if window.size == 0:
        return logits
    token_ids, counts = _distinct_with_counts(window)
    if token_ids[0] < 0 or token_ids[-1] >= logits.shape[0]:
        bad = int(token_ids[0] if token_ids[0] < 0 else token_ids[-1])
        raise LogitsError(
            f"history token id {bad} is outside the vocabulary of {logits.shape[0]} tokens"
        )
    if logits.dtype == np.float32 and _moderate(params):
        fast = _moderately_penalized(logits, params, token_ids, counts)
        if fast is not None:
            return fast
    return _extremely_penalized(logits, params, token_ids, counts)


def _distinct_with_counts(
    window: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp]]:
    """`np.unique(window, return_counts=True)` for a short window, at half its cost."""
    ordered = np.sort(window)
    starts = np.empty(ordered.shape[0] + 1, dtype=bool)
    starts[0] = starts[-1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:-1])
    edges = np.flatnonzero(starts)
    return ordered[edges[:-1]], edges[1:] - edges[:-1]


# Repeat penalties within [1e-10, 1e10] and frequency/presence penalties within
# ±1e200 move a float32 logit (at most 3.4e38 in size) nowhere near float64's limit.
_MODERATE_REPEAT = (1e-10, 1e10)
_MODERATE_AMOUNT = 1e200
_LARGEST_FLOAT32 = float(np.finfo(np.float32).max)


def _moderate(params: PenaltiesParams) -> bool:
    """Whether the penalties cannot overflow float64 on float32 logits."""
    low, high = _MODERATE_REPEAT
    return (
        low <= params.repeat_penalty <= high
        and abs(params.frequency_penalty) <= _MODERATE_AMOUNT
        and abs(params.presence_penalty) <= _MODERATE_AMOUNT
    )


def _moderately_penalized(
    logits: npt.NDArray[np.floating],
    params: PenaltiesParams,
    token_ids: npt.NDArray[np.int64],
    counts: npt.NDArray[np.intp],
) -> npt.NDArray[np.floating] | None:
    """The common case, computed without guards: float32 logits, moderate penalties.

    Returns None when a penalised value falls outside float32's finite range or a
    window token's logit is -inf: `_extremely_penalized` handles those.
    """
    values = logits[token_ids].astype(np.float64)
    if params.repeat_penalty != 1.0:
        values = np.where(
            values > 0, values / params.repeat_penalty, values * params.repeat_penalty
        )
    if params.frequency_penalty != 0.0 or params.presence_penalty != 0.0:
        values -= counts * params.frequency_penalty + params.presence_penalty
    if float(values.min()) < -_LARGEST_FLOAT32 or float(values.max()) > _LARGEST_FLOAT32:
        return None  # also when a window token's logit is -inf
    penalized = logits.copy()
    penalized[token_ids] = values
    return penalized


def _extremely_penalized(
    logits: npt.NDArray[np.floating],
    params: PenaltiesParams,
    token_ids: npt.NDArray[np.int64],
    counts: npt.NDArray[np.intp],
) -> npt.NDArray[np.floating]:
    """The penalties with every guard: any logits' type, any penalty, -inf logits."""
    penalized = logits.copy()
    largest = float(np.finfo(penalized.dtype).max)
    values = penalized[token_ids].astype(np.float64)
    masked = np.isneginf(values)  # a -inf logit stays -inf: never kept
    # Overflow goes to ±inf and is clipped back after each step, so no inf - inf
    # can make a NaN.
    with np.errstate(over="ignore"):
        if params.repeat_penalty != 1.0:
            values = np.where(
                values > 0, values / params.repeat_penalty, values * params.repeat_penalty
            )
            np.clip(values, -largest, largest, out=values)
        amounts = counts * params.frequency_penalty + params.presence_penalty
        values -= np.clip(amounts, -_LARGEST_FLOAT64, _LARGEST_FLOAT64)
    np.clip(values, -largest, largest, out=values)
    values[masked] = -np.inf
    penalized[token_ids] = values
    if penalized.dtype == np.float64:
        return within_float64_span(penalized, float(np.max(penalized)))
    return penalized


@dataclass(frozen=True, slots=True)
class Penalties(Stateless):
    """Repeat, frequency and presence penalties over the last-n window.

    Attributes:
        penalties: The penalties' parameters (the window and the three penalties).
    """

    name: ClassVar[str] = "penalties"
    kind: ClassVar[UnitKind] = "logits"
    placement: ClassVar[Placement] = IN_ORDER
    params: ClassVar[type[PenaltiesParams]] = PenaltiesParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(PenaltiesParams)
    group_titles: ClassVar[Mapping[str, str]] = {"penalties": "penalties"}
    label: ClassVar[str] = "penalties"
    row_label: ClassVar[str] = "pen."
    penalties: PenaltiesParams

    @classmethod
    def summary(
        cls, settings: SamplerSettings, style: SummaryStyle = "active"
    ) -> Mapping[str, str]:
        """The repeat penalty with the window it looks back over: "rep=1.3/64"
        ("rep 1.30×64" in the fixed style)."""
        parts = declared_summary(cls.specs, settings, style)
        parts.pop("repeat_last_n", None)
        window = settings.of(PenaltiesParams).repeat_last_n
        if "repeat_penalty" in parts:
            parts["repeat_penalty"] += f"/{window}" if style == "active" else f"×{window}"
        return parts

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """On when any penalty can change a logit."""
        return settings.of(PenaltiesParams).penalizes

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Penalties | None:
        """Built when some penalty can change a logit."""
        return cls(settings.of(PenaltiesParams)) if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Replace the logits by a penalised copy, with their new maximum."""
        # A fresh copy, not a workspace buffer: copying into a buffer that lies 16
        # bytes past the logits modulo 4 KiB (4K aliasing) runs ten times slower.
        penalized = _penalized(candidates.logits, self.penalties, candidates.history)
        if penalized is not candidates.logits:
            argmax = int(np.argmax(penalized))
            candidates.logits = penalized
            candidates.argmax = argmax
            candidates.maximum = float(penalized[argmax])
