"""Hypothesis's profiles for the test runs, and the example count a property asks for.

`make test` runs every property at its full count (the "samplescope" profile: 100
examples unless the property asks for another number); `make test-fast`, the quick
loop, runs each with a quarter of them ("quick"); `make test-fuzz` runs the fuzz
suites for longer ("fuzz-long"). No profile has a deadline: the machine is shared,
and a timing is no property.
"""

from __future__ import annotations

import os

from hypothesis import settings

FULL_EXAMPLES = 100
"""The examples a property runs in `make test` unless it asks for another number."""

settings.register_profile("samplescope", max_examples=FULL_EXAMPLES, deadline=None)
settings.register_profile("quick", max_examples=FULL_EXAMPLES // 4, deadline=None)
settings.register_profile("fuzz-long", max_examples=3000, deadline=None)


def load_profile() -> None:
    """Load the profile $HYPOTHESIS_PROFILE names ("samplescope" by default)."""
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "samplescope"))


def examples(full: int) -> int:
    """The examples for a property that runs `full` of them in `make test`, in
    proportion under the profile loaded (never fewer than 10)."""
    return max(10, full * settings().max_examples // FULL_EXAMPLES)
