"""Compiled per-node loops shared by the solvers (numba)."""

from __future__ import annotations

import numpy as np

from pipeline.graph import Graph, as_index
from pipeline.solve import tolerance
from pipeline.solve.compiled import inline_kernel, kernel

#: The tie rule of :mod:`pipeline.solve.tolerance`, compiled for the kernels (the one
#: definition; a kernel calls it like any compiled function). Inlined: each is called once per
#: node or state, and compiles as part of its caller rather than on its own.
is_tie = inline_kernel(tolerance.is_tie)
best_of = inline_kernel(tolerance.best_of)
pick = inline_kernel(tolerance.pick)
pick_two = inline_kernel(tolerance.pick_two)
regret = inline_kernel(tolerance.regret)


@kernel
def _best_rows(
    starts: np.ndarray,
    move_value: np.ndarray,
    label: np.ndarray,
    node_value: np.ndarray,
    best: np.ndarray,
    n_optimal: np.ndarray,
) -> None:
    for node in range(starts.shape[0] - 1):
        best[node], n_optimal[node] = pick(
            move_value, label, starts[node], starts[node + 1], node_value[node]
        )


def best_moves_compiled(
    g: Graph, move_value: np.ndarray, node_value: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Best move row of each node (the tie rule's :func:`pick`: the largest label among the
    values that tie with the node's) and the number of rows that tie for best."""
    starts = g.move_starts()
    best = np.zeros(starts.shape[0] - 1, dtype=np.int64)
    n_optimal = np.zeros(starts.shape[0] - 1, dtype=np.int32)
    _best_rows(starts, move_value, as_index(g.mv_label), node_value, best, n_optimal)
    return best, n_optimal
