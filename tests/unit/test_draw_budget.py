"""The UI thread's drawing budget while a reply streams (a token bucket over CPU time)."""

from __future__ import annotations

import pytest

from tui.chat.draw_budget import DrawBudget, budget_for


class Clocks:
    """A wall clock and a CPU clock the test moves by hand."""

    def __init__(self) -> None:
        self.wall = 100.0
        self.cpu = 5.0

    def budget(self, share: float = 0.05, **options: float) -> DrawBudget:
        return DrawBudget(share, clock=lambda: self.wall, cpu_clock=lambda: self.cpu, **options)

    def run(self, wall: float, cpu: float) -> None:
        """`wall` seconds pass, of which the UI thread works `cpu`."""
        self.wall += wall
        self.cpu += cpu


def test_a_redraw_waits_while_the_ui_has_spent_more_than_its_share() -> None:
    clocks = Clocks()
    budget = clocks.budget(0.05, saved_up=0.01, longest_wait=10.0)
    clocks.run(0.1, 0.004)  # earned 5 ms, spent 4: the saved 10 ms cover it
    assert budget.allows() and budget.credit == pytest.approx(0.01)  # capped at saved_up
    clocks.run(0.1, 0.025)  # earned 5 ms, spent 25: 10 ms in debt
    assert not budget.allows() and budget.credit == pytest.approx(-0.01)
    clocks.run(0.1, 0.0)  # 5 ms earned back: still 5 ms in debt
    assert not budget.allows() and budget.credit == pytest.approx(-0.005)
    clocks.run(0.11, 0.0)
    assert budget.allows()
    assert (budget.drawn, budget.held) == (2, 2)


def test_a_long_frame_is_forgiven_past_the_saved_up_debt() -> None:
    clocks = Clocks()
    budget = clocks.budget(0.05, saved_up=0.01, longest_wait=10.0)
    clocks.run(0.05, 0.2)  # a 200 ms layout
    assert not budget.allows() and budget.credit == pytest.approx(-0.01)
    clocks.run(0.2, 0.0)  # 10 ms earned: out of debt after 0.2 s, not 4 s
    assert budget.allows()


def test_the_text_is_redrawn_at_least_every_longest_wait() -> None:
    clocks = Clocks()
    budget = clocks.budget(0.01, saved_up=0.001, longest_wait=0.45)
    allowed = []
    for _ in range(20):
        clocks.run(0.1, 0.05)  # the UI thread is busy half the time: always in debt
        allowed.append(budget.allows())
    assert allowed == [False, False, False, False, True] * 4


def test_restart_fills_the_bucket_and_forgets_the_counts() -> None:
    clocks = Clocks()
    budget = clocks.budget(0.05, saved_up=0.01, longest_wait=10.0)
    clocks.run(0.1, 0.1)
    assert not budget.allows()
    clocks.run(5.0, 0.3)  # between replies: not counted
    budget.restart()
    assert budget.credit == 0.01 and (budget.drawn, budget.held) == (0, 0)
    clocks.run(0.1, 0.01)
    assert budget.allows()


def test_a_budget_only_when_the_decode_takes_every_core() -> None:
    assert budget_for(3, cores=4) is None
    assert isinstance(budget_for(4, cores=4), DrawBudget)
    assert isinstance(budget_for(8, cores=4), DrawBudget)


@pytest.mark.parametrize("share", [0.0, -0.1, 1.5])
def test_a_share_outside_zero_to_one_is_refused(share: float) -> None:
    with pytest.raises(ValueError, match="draw share must be in"):
        DrawBudget(share)
