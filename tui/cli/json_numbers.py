"""Numbers for the commands' JSON: JSON has no infinity and no NaN."""

from __future__ import annotations

import math
from typing import TypeVar

Value = TypeVar("Value")


def finite_or_null(value: Value) -> Value | None:
    """The value, or None (JSON's null) for a float that is not finite."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
