"""Number options checked where they enter: finite, and in range where they have one."""

from __future__ import annotations

import argparse
import math


def finite_float(text: str) -> float:
    """An option's value as a finite float (argparse `type`).

    Raises:
        argparse.ArgumentTypeError: It is not a number, or NaN or infinite.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, not {text!r}")
    return value


def unit_fraction(text: str) -> float:
    """An option's value as a number in (0, 1] (argparse `type`).

    Raises:
        argparse.ArgumentTypeError: It is not a number in that range.
    """
    value = finite_float(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number above 0 and at most 1, not {text!r}")
    return value
