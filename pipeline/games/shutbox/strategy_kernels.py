"""Compiled passes over a graph's move rows for the tile strategies (one pass each, where numpy
would make a pass per tile or per key)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def tile_counts(label, tile_value):  # type: ignore[no-untyped-def]
    """Per move row: how many tiles its label (a bitmask) shuts, and the face value of the
    highest of them (0 and -1 for a pass row, label < 0)."""
    n_shut = np.zeros(label.shape[0], dtype=np.int64)
    high = np.full(label.shape[0], -1, dtype=np.int64)
    for m in range(label.shape[0]):
        bits = label[m]
        if bits < 0:
            continue
        b = 0
        while bits:
            if bits & 1:
                n_shut[m] += 1
                if tile_value[b] > high[m]:
                    high[m] = tile_value[b]
            bits >>= 1
            b += 1
    return n_shut, high


@njit(cache=True, nogil=True)
def first_max_rows(packed, starts):  # type: ignore[no-untyped-def]
    """For each node (its move rows ``starts[n]:starts[n + 1]``), the first row holding the
    node's largest ``packed`` key."""
    rows = np.empty(starts.shape[0] - 1, dtype=np.int64)
    for n in range(rows.shape[0]):
        best = starts[n]
        for m in range(starts[n] + 1, starts[n + 1]):
            if packed[m] > packed[best]:
                best = m
        rows[n] = best
    return rows


@njit(cache=True, nogil=True)
def played_rows(move_prob, mv_node, n_nodes):  # type: ignore[no-untyped-def]
    """Per node: how many of its move rows a policy plays (probability > 0), and the last of
    them."""
    count = np.zeros(n_nodes, dtype=np.int64)
    row = np.zeros(n_nodes, dtype=np.int64)
    for m in range(move_prob.shape[0]):
        if move_prob[m] > 0:
            count[mv_node[m]] += 1
            row[mv_node[m]] = m
    return count, row
