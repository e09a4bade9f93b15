"""What a slider shows for values that round to zero."""

from __future__ import annotations

import pytest

from tui.panel.slider import Slider


def _slider() -> Slider:
    return Slider(
        "frequency_penalty", "freq", minimum=-2.0, maximum=2.0, step=0.01, coarse=0.1, value=0.0
    )


@pytest.mark.parametrize(
    ("value", "shown"),
    [(-0.0, "0.00"), (-0.001, "0.00"), (-0.005, "-0.01"), (0.0, "0.00"), (-1.5, "-1.50")],
)
def test_a_value_that_rounds_to_zero_shows_without_a_sign(value: float, shown: str) -> None:
    slider = _slider()
    assert slider.format_value(value) == shown
    slider.set_value(value)
    assert slider.format_value() == shown
