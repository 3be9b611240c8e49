"""Greedy play against a perfect opponent, exactly: what the ``greedy`` player (the move with
the largest immediate change of the score difference, :func:`pipeline.games.knucklebones.rules.
gain`, ties drawn among the moves: two columns holding the same pair are one move, as the
player engine draws, :mod:`pipeline.games.knucklebones.players.engine`) wins against the
opponent who plays perfectly against it, its best response.

Greedy's policy is fixed and the opponent's best answer to it is a solve: the value of every
position with the opponent to move (W, the best move) and with greedy to move (G, the mean
over greedy's tied moves), each reading the other's values at the successors. On the full
game that is twice a solve's bounds, run on the GPU
(:func:`pipeline.games.knucklebones.exact.gpu.greedy_solve`); :func:`solve_cpu` is the same
definition written plainly with the game's own moves, for small boards: what the GPU's kernel is
tested against.

A draw counts 1/2. Greedy moving first wins ``G(start)``; moving second ``1 - W(start)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pipeline.errors import UsageError
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules

#: The largest board :func:`solve_cpu` takes (it holds every position's moves in Python lists).
MAX_CPU_STATES = 20_000


@dataclass(frozen=True)
class GreedyValue:
    """Greedy against its best response from the empty boards: bounds of each value."""

    rules: KnuckleRules
    greedy_to_move: tuple[float, float]
    """G(start): greedy moving first, its value (lower, upper bound)."""
    perfect_to_move: tuple[float, float]
    """W(start): the perfect player moving first, its value against greedy."""
    tolerance: float
    converged: bool
    """Whether every bound met the tolerance (False: cut short, the bounds still hold)."""
    sweeps: int
    seconds: float
    sweep_seconds: float
    dtype: str
    backend: str

    @property
    def offset(self) -> float:
        return 1.0 if self.rules.objective == "wins" else 0.0

    @property
    def greedy_first(self) -> tuple[float, float]:
        """Greedy's value moving first (its win chance for ``wins``), lower and upper bound."""
        return self.greedy_to_move

    @property
    def greedy_second(self) -> tuple[float, float]:
        """Greedy's value moving second: the other side of the perfect player's."""
        lo, hi = self.perfect_to_move
        return self.offset - hi, self.offset - lo

    def record(self) -> dict[str, Any]:
        """The result as plain data (JSON)."""
        out = asdict(self)
        out["rules"] = asdict(self.rules)
        out["greedy_first"] = list(self.greedy_first)
        out["greedy_second"] = list(self.greedy_second)
        return out


def solve_cpu(rules: KnuckleRules, tol: float = 1e-12, max_sweeps: int = 100_000) -> GreedyValue:
    """Greedy against its best response on a small board, on the CPU, by the game's own moves
    (:meth:`Knucklebones.successors`, the greedy player's gain: :func:`rules.gain`):
    Jacobi sweeps until no value changes by more than ``tol / 100``. UsageError above
    :data:`MAX_CPU_STATES` positions."""
    import time

    t0 = time.perf_counter()
    w, g, sweeps = values_cpu(rules, tol, max_sweeps)
    seconds = time.perf_counter() - t0
    return GreedyValue(
        rules, (float(g[0]), float(g[0])), (float(w[0]), float(w[0])), tol, True, sweeps,
        seconds, seconds, "float64", "cpu",
    )  # fmt: skip


def values_cpu(
    rules: KnuckleRules, tol: float = 1e-12, max_sweeps: int = 100_000
) -> tuple[np.ndarray, np.ndarray, int]:
    """Every position's value with the perfect player to move against greedy (W) and with
    greedy to move (G), by state id, and the sweeps it took (see :func:`solve_cpu`)."""
    from pipeline.games.knucklebones.exact.cpu import pairs_of
    from pipeline.games.knucklebones.players.evaluator import gain_table

    game = Knucklebones(rules)
    n = game.n_states
    if n > MAX_CPU_STATES:
        raise UsageError(f"{n:,} positions are too many for the plain greedy solve (GPU: gpu.py)")
    t = game.t
    pos = pairs_of(rules, np.arange(n))
    over = game.terminal_mask(pos)
    final = game.final_values(pos)
    offset = 1.0 if rules.objective == "wins" else 0.0
    gains = gain_table(t)
    # per live position and die: every move's successor (a column holding the pair of one
    # before it is that column's move), and greedy's tied moves'
    best: list[list[np.ndarray]] = []
    tied: list[list[np.ndarray]] = []
    for s in range(n):
        moves, ties = [], []
        if not over[s]:
            for die in range(1, rules.faces + 1):
                after = [(c, p) for c, p in game.successors(pos[s], die)
                         if pos[s][c] not in pos[s][:c]]  # fmt: skip
                ids = np.array([game.state_of(p) for _, p in after], dtype=np.int64)
                gain = gains[pos[s][[c for c, _ in after]], die - 1]
                moves.append(ids)
                ties.append(ids[gain == gain.max()])
        best.append(moves)
        tied.append(ties)
    w = np.where(over, final, 0.5 * offset)
    g = w.copy()
    sweeps = 0
    for sweeps in range(1, max_sweeps + 1):  # noqa: B007 (the count is the result)
        w2, g2 = w.copy(), g.copy()
        for k in np.flatnonzero(~over):
            w2[k] = np.mean([np.max(offset - g[ids]) for ids in best[k]])
            g2[k] = np.mean([np.mean(offset - w[ids]) for ids in tied[k]])
        change = max(float(np.abs(w2 - w).max()), float(np.abs(g2 - g).max()))
        w, g = w2, g2
        if change <= tol / 100:
            break
    return w, g, sweeps
