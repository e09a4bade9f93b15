"""What each tick of the redraw timer draws while a reply streams."""

from __future__ import annotations

from tui.chat.draw_budget import DrawBudget
from tui.chat.paint_schedule import FULL_REDRAW_EVERY, PaintSchedule

PAINT_EVERY = {"reply": 1, "probs": 2, "status": 4, "timeline": 4, "tail": 4}
"""The chat's parts and rates (the text, the bars, the status line and the plots)."""


def schedule() -> PaintSchedule[str]:
    return PaintSchedule(PAINT_EVERY, text="reply")


class Scripted(DrawBudget):
    """A budget that allows the redraws its script says, in turn."""

    def __init__(self, script: list[bool]) -> None:
        super().__init__(0.5)
        self.script = script

    def allows(self) -> bool:
        allowed = self.script.pop(0)
        self.drawn += allowed
        self.held += not allowed
        return allowed


def drawn(schedule: PaintSchedule[str], ticks: int) -> list[set[str]]:
    return [schedule.tick() for _ in range(ticks)]


def test_without_a_budget_each_part_comes_at_its_own_cadence() -> None:
    ticks = drawn(schedule(), 8)
    for part, every in PAINT_EVERY.items():
        assert [tick for tick, due in enumerate(ticks, 1) if part in due] == list(
            range(every, 9, every)
        )


def test_held_to_a_budget_two_redraws_in_three_are_the_text_alone() -> None:
    assert FULL_REDRAW_EVERY == 3
    paints = schedule()
    paints.budget = Scripted([False, True, True, True, False, False, True, True, True])
    everything = set(PAINT_EVERY)
    # Held at tick 1. The 1st redraw with the bars owed (tick 2) draws them: a reply
    # shows its bars at once. A redraw with only the text owed (ticks 3 and 9) draws
    # it and takes no turn. Of the others, two are the text alone (ticks 4 and 7) and
    # the third (tick 8) draws everything owed since.
    assert drawn(paints, 9) == [
        set(),
        {"reply", "probs"},
        {"reply"},
        {"reply"},
        set(),
        set(),
        {"reply"},
        everything,
        {"reply"},
    ]


def test_a_new_reply_starts_with_nothing_owed_a_fresh_budget_and_its_bars_due() -> None:
    paints = schedule()
    budget = Scripted([True, True, False, False, False, False, True, True])
    paints.budget = budget
    drawn(paints, 2)  # the text, then a full redraw: the next bars wait two turns
    drawn(paints, 4)  # everything owed, nothing drawn
    paints.restart()
    assert budget.drawn == budget.held == 0
    # Nothing owed from before, and the new reply's first bars come at once.
    assert drawn(paints, 2) == [{"reply"}, {"reply", "probs"}]
