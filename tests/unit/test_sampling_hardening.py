"""Hostile input to the sampler: extreme penalties and logits, bad histories, huge settings.

Every step of a hostile but accepted input must give a finite record without a
numpy warning; input that cannot be sampled from must raise the documented error.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from sampling.errors import LogitsError, SettingsError
from sampling.records import Step
from sampling.sampler import Sampler, probabilities
from sampling.settings.record import SamplerSettings

pytestmark = pytest.mark.filterwarnings("error")

FLOAT32_MAX = float(np.finfo(np.float32).max)
FLOAT64_MAX = float(np.finfo(np.float64).max)

# The defect's settings: each pushed float32 logits to ±inf.
EXTREME_PENALTIES: list[dict[str, float]] = [
    {"repeat_penalty": 1e-300},
    {"repeat_penalty": 1e-40},
    {"repeat_penalty": 1e300},
    {"presence_penalty": -1e39},
    {"presence_penalty": 1e39},
    {"frequency_penalty": -1e308},
    {"frequency_penalty": 1e308},
    {"frequency_penalty": -1e308, "presence_penalty": 1e308, "repeat_penalty": 1e-300},
]


def _assert_finite_step(step: Step) -> None:
    assert math.isfinite(step.prob) and 0.0 < step.prob <= 1.0
    assert math.isfinite(step.entropy) and step.entropy >= 0.0
    table = step.table
    for column in (table.logits, table.prob_before, table.prob_after):
        assert np.isfinite(column).all()
    assert table.prob_before.sum() <= 1.0 + 1e-9
    assert step.n_kept >= 1


def _mixed_logits(dtype: type[np.floating[Any]]) -> npt.NDArray[np.floating[Any]]:
    return np.random.default_rng(3).normal(scale=4.0, size=64).astype(dtype)


@pytest.mark.parametrize("penalties", EXTREME_PENALTIES, ids=str)
@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extreme_penalties_give_finite_records(
    penalties: dict[str, float], temperature: float, dtype: type[np.floating[Any]]
) -> None:
    settings = SamplerSettings(temperature=temperature, repeat_last_n=64, **penalties)
    logits = _mixed_logits(dtype)
    history = list(range(0, 64, 3)) * 2  # a third of the vocabulary, each twice
    sampler = Sampler(settings)
    for _ in range(3):
        _assert_finite_step(sampler.sample(logits, history))
    probs = probabilities(logits, settings, history)
    assert np.isfinite(probs).all()
    assert probs.sum() == pytest.approx(1.0)


def test_a_penalty_that_overflows_pins_the_logit_at_the_largest_float32() -> None:
    # 2 / 1e-40 = 2e40 is beyond float32: the logit stops at float32's maximum.
    logits = np.array([2.0, 3.0, -1.0], dtype=np.float32)
    settings = SamplerSettings(temperature=0.0, repeat_penalty=1e-40, repeat_last_n=4)
    step = Sampler(settings).sample(logits, [0])
    assert step.token_id == 0
    assert step.table.logits.tolist() == [FLOAT32_MAX, 3.0, -1.0]
    assert step.entropy == 0.0
    assert step.table.prob_before.tolist() == [1.0, 0.0, 0.0]


def test_a_negative_frequency_penalty_that_overflows_keeps_the_others_apart() -> None:
    # Tokens 0 and 1 both climb to float32's maximum: they share the mass, 2 is cut off.
    logits = np.array([0.5, -2.0, 1.0], dtype=np.float32)
    settings = SamplerSettings(frequency_penalty=-1e308, repeat_last_n=8)
    step = Sampler(settings).sample(logits, [0, 1, 1])
    assert step.table.logits.tolist() == [FLOAT32_MAX, FLOAT32_MAX, 1.0]
    assert step.table.prob_before.tolist() == [0.5, 0.5, 0.0]
    assert step.entropy == pytest.approx(math.log(2), abs=1e-12)


@pytest.mark.parametrize(
    ("logits", "entropy", "before"),
    [
        (np.full(10, 1.7e308), math.log(10), [0.1] * 10),
        (np.full(10, -3e38, dtype=np.float32), math.log(10), [0.1] * 10),
        (np.full(4, 1e30, dtype=np.float32), math.log(4), [0.25] * 4),
        (np.array([FLOAT32_MAX, -FLOAT32_MAX], dtype=np.float32), 0.0, [1.0, 0.0]),
        (np.array([1.7e308, -1.7e308]), 0.0, [1.0, 0.0]),
        (np.array([-FLOAT64_MAX, FLOAT64_MAX, 0.0]), 0.0, [1.0, 0.0, 0.0]),
    ],
    ids=[
        "all-1.7e308",
        "all-minus-3e38-f32",
        "all-1e30-f32",
        "f32-extremes",
        "f64-extremes",
        "f64-max",
    ],
)
def test_extreme_logits_give_finite_entropy_and_probabilities(
    logits: npt.NDArray[np.floating[Any]], entropy: float, before: list[float]
) -> None:
    step = Sampler(SamplerSettings(), n_candidates=len(before)).sample(logits)
    _assert_finite_step(step)
    assert step.entropy == pytest.approx(entropy, abs=1e-12)
    assert step.table.prob_before.tolist() == pytest.approx(before, abs=1e-12)
    assert probabilities(logits, SamplerSettings()).sum() == pytest.approx(1.0)


BAD_HISTORIES: list[tuple[object, str]] = [
    ([2**70], "1180591620717411303424"),
    ([3, float("nan")], "nan"),
    (["a"], "'a'"),
    ([None], "None"),
    ([1.5], "1.5"),
    ([True], "True"),
    ([0, False], "False"),
    (np.array([1.5]), "1.5"),
    (np.array([2**63], dtype=np.uint64), "9223372036854775808"),
    ([[1, 2]], "shape"),
    (None, "NoneType"),
    ("12", "str"),
]


@pytest.mark.parametrize(("history", "named"), BAD_HISTORIES, ids=repr)
def test_a_history_that_is_not_token_ids_is_a_logits_error(history: object, named: str) -> None:
    settings = SamplerSettings(repeat_penalty=1.1, repeat_last_n=4)
    with pytest.raises(LogitsError, match="history") as caught:
        Sampler(settings).sample(np.zeros(8, dtype=np.float32), history)  # type: ignore[arg-type]
    assert named in str(caught.value)
    with pytest.raises(LogitsError):
        probabilities(np.zeros(8), settings, history)  # type: ignore[arg-type]


@pytest.mark.parametrize("history", [[1, 2, 3], (7,), np.array([4, 5], dtype=np.uint16), []])
def test_integer_histories_are_accepted(history: object) -> None:
    settings = SamplerSettings(temperature=0.0, repeat_penalty=2.0, repeat_last_n=2)
    step = Sampler(settings).sample(np.arange(8, dtype=np.float32), history)  # type: ignore[arg-type]
    assert step.token_id == (6 if 7 in history else 7)  # type: ignore[operator]


@pytest.mark.parametrize(
    "field", ["temperature", "top_p", "min_p", "repeat_penalty", "presence_penalty"]
)
@pytest.mark.parametrize("value", [10**400, -(10**400)], ids=["1e400", "-1e400"])
def test_an_integer_too_large_for_a_float_is_a_settings_error(field: str, value: int) -> None:
    with pytest.raises(SettingsError, match=f"invalid {field}="):
        SamplerSettings(**{field: value})


@pytest.mark.parametrize("penalties", EXTREME_PENALTIES, ids=str)
def test_a_masked_logit_stays_masked_under_any_penalty(penalties: dict[str, float]) -> None:
    logits = np.array([1.0, -np.inf, 0.0], dtype=np.float32)
    settings = SamplerSettings(repeat_last_n=4, **penalties)
    probs = probabilities(logits, settings, [1, 1, 0])
    assert probs[1] == 0.0
    assert probs.sum() == pytest.approx(1.0)
