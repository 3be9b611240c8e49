"""Compiled per-node loops shared by the solvers (numba)."""

from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.graph import Graph
from pipeline.solve import tolerance

#: The tie rule of :mod:`pipeline.solve.tolerance`, compiled for the kernels (the one
#: definition; a kernel calls it like any compiled function).
is_tie = njit(cache=True)(tolerance.is_tie)
best_of = njit(cache=True)(tolerance.best_of)
pick = njit(cache=True)(tolerance.pick)
regret = njit(cache=True)(tolerance.regret)


@njit(cache=True)
def _best_rows(
    starts: np.ndarray, move_value: np.ndarray, label: np.ndarray, node_value: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    n = starts.shape[0] - 1
    best = np.empty(n, dtype=np.int64)
    n_optimal = np.zeros(n, dtype=np.int32)
    for node in range(n):
        best[node], n_optimal[node] = pick(
            move_value, label, starts[node], starts[node + 1], node_value[node]
        )
    return best, n_optimal


def best_moves_compiled(
    g: Graph, move_value: np.ndarray, node_value: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Best move row of each node (ties within 1e-12, relative, to the largest label) and the
    number of rows that tie for best."""
    return _best_rows(g.move_starts(), move_value, g.mv_label, node_value)
