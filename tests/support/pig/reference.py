"""Pig solved from Neller and Presser's equations alone (no part of the pipeline): the independent
solution the plugin's tables are checked against.

P(i, j, k): the chance that the player to move, with i points against j and a turn total k,
wins, rolling now. A roll of 1 passes the turn with nothing banked (1 - P(j, i, 0)); a roll r of
2 or more makes the turn total t = k + r, after which the player holds (1 - P(j, i + t, 0),
or 1 at the goal) or rolls again (P(i, j, t)), whichever is worth more.

:func:`solve` is the equations in plain Python (a small goal, every state a dict entry);
:func:`solve_array` the same equations over numpy arrays, for the goals where holding is
optimal (from about 40 points: below, rolling again is worth more in every decision).
"""

from __future__ import annotations

import numpy as np

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


def solve_array(goal: int, tol: float = 1e-13) -> np.ndarray:
    """P[i, j, k] (NaN where i + k >= goal) by value iteration, each sweep from the highest turn
    total down, so that rolling again meets this sweep's values (about 150 sweeps at 100)."""
    g = goal
    p = np.full((g, g, g + SIDES), np.nan)
    for k in range(g):
        p[: g - k, :, k] = 0.5
    scores = np.arange(g)
    while True:
        change = 0.0
        for k in range(g - 1, -1, -1):
            rows = g - k  # my score i < goal - k
            start = p[:, :, 0].T  # start[i, j] = P(j, i, 0): the opponent to move
            new = (1 - start[:rows]) / SIDES
            for r in range(2, SIDES + 1):
                banked = scores[:rows] + k + r
                hold = 1 - start[np.minimum(banked, g - 1)]
                best = np.where((banked >= g)[:, None], 1.0, np.fmax(hold, p[:rows, :, k + r]))
                new = new + best / SIDES
            change = max(change, float(np.max(np.abs(new - p[:rows, :, k]))))
            p[:rows, :, k] = new
        if change < tol:
            return p[:, :, :g]


def hold_and_roll(p: np.ndarray, i: np.ndarray, j: np.ndarray, t: np.ndarray):
    """What holding and rolling again are worth after a roll made the turn total ``t`` (arrays
    of decisions before the goal: ``i + t < goal``)."""
    return 1 - p[j, i + t, 0], p[i, j, t]
