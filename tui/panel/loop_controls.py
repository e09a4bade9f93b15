"""The sampling panel's loops: what a repetition loop found in a reply does."""

from __future__ import annotations

from dataclasses import replace

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message

from backend.session.loop_watch import LOOP_MODES, LoopGuard
from sampling.analysis.loops import LoopRule
from tui.panel.toggle import Toggle

LOOP_FIELDS = ("loop_mode", "loop_count", "loop_period")
"""The controls' fields (not sampler settings: the sampling panel leaves them alone)."""
COUNTS = (2, 3, 4, 6, 8)
PERIODS = (16, 32, 64, 128, 256)


def _choices(values: tuple[int, ...], current: int) -> tuple[tuple[object, str], ...]:
    """The toggle's choices, the value in force among them."""
    return tuple((value, str(value)) for value in sorted({*values, current}))


class LoopControls(Vertical):
    """Loops off, marked on the reply (its timeline and the status line) or stopping
    it; how many copies back to back make one, and the longest period looked for."""

    DEFAULT_CSS = """
    LoopControls { height: auto; }
    """

    class Changed(Message):
        """Another loop watch asked for.

        Attributes:
            guard: The watch asked for.
        """

        def __init__(self, guard: LoopGuard) -> None:
            super().__init__()
            self.guard = guard

    def __init__(self, guard: LoopGuard | None = None) -> None:
        super().__init__(id="loop-controls")
        self.guard = guard or LoopGuard()

    def compose(self) -> ComposeResult:
        rule = self.guard.rule
        yield Toggle("loop_mode", "loops", [(m, m) for m in LOOP_MODES], self.guard.mode)
        yield Toggle("loop_count", "copies", _choices(COUNTS, rule.min_count), rule.min_count)
        yield Toggle(
            "loop_period", "max period", _choices(PERIODS, rule.max_period), rule.max_period
        )

    def show(self, guard: LoopGuard) -> None:
        """Show the watch in force."""
        self.guard = guard
        values = {
            "loop_mode": guard.mode,
            "loop_count": guard.rule.min_count,
            "loop_period": guard.rule.max_period,
        }
        for toggle in self.query(Toggle):
            toggle.set_value(values[toggle.field])

    @on(Toggle.Changed)
    def _on_toggle(self, event: Toggle.Changed) -> None:
        event.stop()
        guard, value = self.guard, event.value
        field = event.toggle.field
        if field == "loop_mode" and value in LOOP_MODES:
            guard = LoopGuard(value, guard.rule)
        elif field == "loop_count" and isinstance(value, int):
            guard = replace(guard, rule=replace(guard.rule, min_count=value))
        elif field == "loop_period" and isinstance(value, int):
            low = min(guard.rule.min_period, value)
            guard = replace(guard, rule=LoopRule(low, value, guard.rule.min_count))
        self.guard = guard
        self.post_message(self.Changed(guard))


def loops_title(guard: LoopGuard) -> str:
    """The panel group's title: the mode and the rule when on."""
    if not guard:
        return "loops · off"
    rule = guard.rule
    return f"loops · {guard.mode} · ×{rule.min_count} ≤{rule.max_period} tok"
