"""What each tick of the redraw timer draws while a reply streams."""

from __future__ import annotations

from tui.chat.draw_budget import DrawBudget
from tui.chat.paint_schedule import PAINT_EVERY, PaintSchedule


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


def drawn(schedule: PaintSchedule, ticks: int) -> list[set[str]]:
    return [schedule.tick() for _ in range(ticks)]


def test_without_a_budget_each_part_comes_at_its_own_cadence() -> None:
    ticks = drawn(PaintSchedule(), 8)
    for part, every in PAINT_EVERY.items():
        assert [tick for tick, due in enumerate(ticks, 1) if part in due] == list(
            range(every, 9, every)
        )


def test_held_to_a_budget_every_other_redraw_is_the_text_alone() -> None:
    schedule = PaintSchedule()
    schedule.budget = Scripted([False, True, True, False, False, True, True, True])
    everything = set(PAINT_EVERY)
    # Held at tick 1. The 1st redraw allowed (tick 2) is the text alone, and the bars
    # due then come with the 2nd (tick 3). Held at 4 and 5; the 3rd (tick 6) is the
    # text alone, and everything owed comes with the 4th (tick 7).
    assert drawn(schedule, 8) == [
        set(),
        {"reply"},
        {"reply", "probs"},
        set(),
        set(),
        {"reply"},
        everything,
        {"reply"},
    ]


def test_a_new_reply_starts_with_nothing_owed_and_a_full_budget() -> None:
    schedule = PaintSchedule()
    schedule.budget = Scripted([False, False, False, False, True])
    drawn(schedule, 4)  # everything owed, nothing drawn
    schedule.restart()
    assert schedule.tick() == {"reply"}
