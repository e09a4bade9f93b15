"""Verbose output on stderr (-v, -vv): one line at a time."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from sampling.samplers.base import figure_text

if TYPE_CHECKING:
    from sampling.records import Step


def log(message: str) -> None:
    """One line of verbose output on stderr."""
    print(f"samplescope: {message}", file=sys.stderr, flush=True)


def step_line(index: int, step: Step, piece: str) -> str:
    """A step's record on one line (for -vv), each unit's report as unit.figure=value."""
    draw = "-" if step.draw is None else f"{step.draw:.6f}"
    reported = "".join(
        f" {unit}.{name}={figure_text(value)}"
        for unit, figures in step.reports.items()
        for name, value in figures.items()
    )
    return (
        f"step {index}: token {step.token_id} {piece!r} p={step.prob:.4f} kept={step.n_kept}"
        f" cut_by={step.cut_by} H={step.entropy:.3f} draw={draw} {step.elapsed_us:.0f}us" + reported
    )
