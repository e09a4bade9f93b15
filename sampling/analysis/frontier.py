"""The Pareto frontier of points to be maximised on two axes (quality and diversity).

A point is on the frontier when no other point is at least as good on both axes and
better on one. Equal points are all on it.
"""

from __future__ import annotations

from collections.abc import Sequence


def pareto_frontier(points: Sequence[tuple[float, float]]) -> list[int]:
    """The indices of the frontier's points, by increasing x (then decreasing y, then
    index)."""
    order = sorted(range(len(points)), key=lambda i: (-points[i][0], -points[i][1]))
    frontier: list[int] = []
    best_y = float("-inf")
    best_at_x: tuple[float, float] | None = None
    for index in order:
        x, y = points[index]
        # Equal to the last kept point: kept too; else kept only above every y so far
        # (every earlier point has an x at least as large).
        if (x, y) == best_at_x or y > best_y:
            frontier.append(index)
            best_y = max(best_y, y)
            best_at_x = (x, y)
    return sorted(frontier, key=lambda i: (points[i][0], -points[i][1], i))
