"""Greedy against its best response on a small Knucklebones board, on the CPU: the definition of
:mod:`pipeline.games.knucklebones.exact.greedy` written plainly with the game's own moves, what
the GPU's kernel (:func:`pipeline.games.knucklebones.exact.gpu.greedy_solve`) is tested against
(the artefact tests, and ``benchmarks/gpu_artefacts.py greedy --reference``).
"""

from __future__ import annotations

import numpy as np

from pipeline.errors import UsageError
from pipeline.games.knucklebones.exact.greedy import GreedyValue
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules

#: The largest board :func:`solve_cpu` takes (it holds every position's moves in Python lists).
MAX_CPU_STATES = 20_000


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
