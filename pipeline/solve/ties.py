"""Compiled per-node loops shared by the solvers (numba)."""

from __future__ import annotations

import numpy as np

from pipeline.graph import Graph, as_index
from pipeline.solve import tolerance
from pipeline.solve.compiled import inline_kernel, kernel

#: The tie rule of :mod:`pipeline.solve.tolerance`, compiled for the kernels (the one
#: definition; a kernel calls it like any compiled function).
tie_tolerance = inline_kernel(tolerance.tie_tolerance)
is_tie = inline_kernel(tolerance.is_tie)


@kernel
def _best_rows(
    starts: np.ndarray,
    move_value: np.ndarray,
    label: np.ndarray,
    node_value: np.ndarray,
    best: np.ndarray,
    n_optimal: np.ndarray,
) -> None:
    # the outputs come allocated (zeros): an allocation here would compile numpy's allocator
    # for its type too, on a first run
    for node in range(starts.shape[0] - 1):
        target = node_value[node]
        tol = tie_tolerance(target)
        pick = -1
        for m in range(starts[node], starts[node + 1]):
            if abs(move_value[m] - target) <= tol:
                n_optimal[node] += 1
                if pick < 0 or label[m] > label[pick]:
                    pick = m
        best[node] = pick


def best_moves_compiled(
    g: Graph, move_value: np.ndarray, node_value: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Best move row of each node (ties within 1e-12, relative, to the largest label) and the
    number of rows that tie for best."""
    starts = g.move_starts()
    best = np.zeros(starts.shape[0] - 1, dtype=np.int64)
    n_optimal = np.zeros(starts.shape[0] - 1, dtype=np.int32)
    _best_rows(starts, move_value, as_index(g.mv_label), node_value, best, n_optimal)
    return best, n_optimal
