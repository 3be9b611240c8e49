"""Pig solved from Neller and Presser's equations alone, in plain Python (no part of the
pipeline): the independent solution the plugin's tables are checked against.

P(i, j, k): the chance that the player to move, with i points against j and a turn total k,
wins, rolling now. A roll of 1 passes the turn with nothing banked (1 - P(j, i, 0)); a roll r of
2 or more makes the turn total t = k + r, after which the player holds (1 - P(j, i + t, 0),
or 1 at the goal) or rolls again (P(i, j, t)), whichever is worth more.
"""

from __future__ import annotations

SIDES = 6


def solve(goal: int, tol: float = 1e-14) -> dict[tuple[int, int, int], float]:
    """P(i, j, k) for every i, j < goal and k < goal - i, by value iteration."""
    p = {(i, j, k): 0.5 for i in range(goal) for j in range(goal) for k in range(goal - i)}
    while True:
        change = 0.0
        for (i, j, k), old in p.items():
            new = (1 - p[(j, i, 0)]) / SIDES
            for r in range(2, SIDES + 1):
                new += decide(p, goal, i, j, k + r)[0] / SIDES
            change = max(change, abs(new - old))
            p[(i, j, k)] = new
        if change < tol:
            return p


def decide(p: dict[tuple[int, int, int], float], goal: int, i: int, j: int, t: int):
    """(value, hold?, the other choice's value) after a roll makes the turn total ``t``."""
    if i + t >= goal:
        return 1.0, True, None
    hold, roll = 1 - p[(j, i + t, 0)], p[(i, j, t)]
    return max(hold, roll), hold > roll, min(hold, roll)
