"""Every bad input gives a clear error that says what is wrong (one test each)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sampling import (
    LogitsError,
    Sampler,
    SamplerSettings,
    SamplescopeError,
    SettingsError,
    probabilities,
)

GOOD = np.array([2.0, 1.5, 1.0, 0.5, 0.0, -1.0], dtype=np.float32)


def sample_error(logits: object, **sampler_kwargs: object) -> LogitsError:
    """The LogitsError raised by both `probabilities` and `Sampler.sample`."""
    with pytest.raises(LogitsError) as from_probabilities:
        probabilities(logits, SamplerSettings())
    with pytest.raises(LogitsError) as from_sampler:
        Sampler(SamplerSettings(), **sampler_kwargs).sample(logits)  # type: ignore[arg-type]
    assert str(from_probabilities.value) == str(from_sampler.value)
    error = from_sampler.value
    assert isinstance(error, SamplescopeError) and isinstance(error, ValueError)
    assert "logits" in str(error)
    return error


# --- logits ---------------------------------------------------------------------


def test_logits_with_a_batch_axis() -> None:
    message = str(sample_error(GOOD.reshape(1, 6)))
    assert "one-dimensional" in message
    assert "(1, 6)" in message
    assert "logits[0]" in message


def test_logits_scalar() -> None:
    message = str(sample_error(np.float32(1.0)))
    assert "one-dimensional" in message and "()" in message


def test_logits_rank_three() -> None:
    message = str(sample_error(np.zeros((2, 3, 4), dtype=np.float32)))
    assert "one-dimensional" in message and "(2, 3, 4)" in message


def test_logits_wrong_length() -> None:
    with pytest.raises(LogitsError, match=r"logits have 6 scores but the vocabulary has 7"):
        Sampler(SamplerSettings(), vocab_size=7).sample(GOOD)


def test_logits_with_nan() -> None:
    logits = GOOD.copy()
    logits[3] = np.nan
    message = str(sample_error(logits))
    assert "NaN" in message and "token id 3" in message


def test_logits_with_nan_after_the_max_and_inf() -> None:
    logits = np.array([np.inf, 1.0, np.nan], dtype=np.float64)
    message = str(sample_error(logits))
    assert "NaN" in message and "2" in message


def test_logits_all_minus_inf() -> None:
    message = str(sample_error(np.full(5, -np.inf, dtype=np.float32)))
    assert "no finite value" in message and "-inf" in message and "5" in message


def test_logits_empty() -> None:
    message = str(sample_error(np.array([], dtype=np.float32)))
    assert "empty" in message


def test_logits_of_strings() -> None:
    message = str(sample_error(np.array(["a", "b"])))
    assert "numbers" in message and "<U1" in message


def test_logits_of_objects() -> None:
    message = str(sample_error(np.array([1.0, None], dtype=object)))
    assert "numbers" in message and "object" in message


def test_logits_of_complex_numbers() -> None:
    message = str(sample_error(np.array([1 + 1j, 2 + 0j])))
    assert "numbers" in message and "complex" in message


def test_integer_logits_are_accepted() -> None:
    # Integers are numbers: converted, not rejected.
    probs = probabilities(np.array([3, 1, 2]), SamplerSettings())
    assert probs.argmax() == 0 and abs(probs.sum() - 1) < 1e-12


def test_history_id_outside_vocabulary_in_sampler() -> None:
    sampler = Sampler(SamplerSettings(repeat_penalty=1.1, repeat_last_n=4))
    with pytest.raises(LogitsError, match=r"history token id 6 .*6 tokens"):
        sampler.sample(GOOD, history=[0, 6])


def test_sampler_rejects_non_settings() -> None:
    with pytest.raises(TypeError, match="SamplerSettings"):
        Sampler({"temperature": 1.0})  # type: ignore[arg-type]
    sampler = Sampler(SamplerSettings())
    with pytest.raises(TypeError, match="SamplerSettings"):
        sampler.settings = None  # type: ignore[assignment]


# --- settings -------------------------------------------------------------------

BAD_SETTINGS = [
    ("temperature", -0.1),
    ("temperature", float("nan")),
    ("temperature", float("inf")),
    ("temperature", "0.8"),
    ("temperature", True),
    ("top_k", -1),
    ("top_k", 2.0),
    ("top_k", True),
    ("top_k", "40"),
    ("top_p", 0.0),
    ("top_p", -0.5),
    ("top_p", 1.5),
    ("top_p", float("nan")),
    ("top_p", False),
    ("min_p", 1.0),
    ("min_p", -0.01),
    ("min_p", float("nan")),
    ("repeat_penalty", 0.0),
    ("repeat_penalty", -1.0),
    ("repeat_penalty", float("inf")),
    ("repeat_last_n", -1),
    ("repeat_last_n", 64.0),
    ("frequency_penalty", float("nan")),
    ("frequency_penalty", float("-inf")),
    ("presence_penalty", float("inf")),
    ("presence_penalty", None),
    ("temperature_last", 1),
    ("temperature_last", "yes"),
    ("seed", -1),
    ("seed", 2**64),
    ("seed", 1.0),
    ("seed", True),
    ("top_p_scope", "all"),
    ("top_p_scope", "Kept"),
    ("draw", "multinomial"),
    ("rng", "mt19937"),
    ("rng", "xorshift"),
]


@pytest.mark.parametrize(("field", "value"), BAD_SETTINGS, ids=lambda v: repr(v))
def test_bad_setting(field: str, value: object) -> None:
    with pytest.raises(SettingsError) as caught:
        SamplerSettings(**{field: value})  # type: ignore[arg-type]
    error = caught.value
    assert isinstance(error, ValueError) and isinstance(error, SamplescopeError)
    assert error.field == field
    message = str(error)
    assert field in message
    assert repr(value) in message
    assert "expected" in message


@pytest.mark.parametrize(("field", "value"), BAD_SETTINGS[:8], ids=lambda v: repr(v))
def test_bad_setting_through_with_changes(field: str, value: object) -> None:
    with pytest.raises(SettingsError, match=re.escape(field)):
        SamplerSettings().with_changes(**{field: value})


def test_unknown_setting_in_dict() -> None:
    with pytest.raises(SettingsError, match="tempreature"):
        SamplerSettings.from_dict({"tempreature": 0.5})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", 0.0),
        ("top_k", 0),
        ("top_p", 1.0),
        ("top_p", 1e-9),
        ("min_p", 0.0),
        ("min_p", 0.999),
        ("repeat_penalty", 1e-3),
        ("repeat_last_n", 0),
        ("frequency_penalty", -2.0),
        ("presence_penalty", -2.0),
        ("seed", 0),
        ("seed", 2**64 - 1),
        ("temperature", 7),
        ("top_p", 1),
    ],
)
def test_boundary_values_are_valid(field: str, value: object) -> None:
    settings = SamplerSettings(**{field: value})  # type: ignore[arg-type]
    assert getattr(settings, field) == value
