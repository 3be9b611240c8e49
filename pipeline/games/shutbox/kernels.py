"""Compiled loops that list Shut the Box moves straight into node order (numba).

For every decision node (state, roll) the legal moves are the sets of tiles with sum ``roll`` that
are all open. The candidate sets for each roll are few (at most a few dozen), so one pass over
the nodes checking each candidate is fast compiled, and writes every move into its final slot.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def count_moves(
    ids: np.ndarray, roll_ok: np.ndarray, sub_masks: np.ndarray, sub_start: np.ndarray
) -> np.ndarray:
    """Number of legal moves of every node, nodes in (state index, roll) order."""
    n_states, width = roll_ok.shape
    counts = np.zeros(int(roll_ok.sum()), dtype=np.int32)
    node = 0
    for i in range(n_states):
        s = ids[i]
        for r in range(width):
            if roll_ok[i, r]:
                c = 0
                for k in range(sub_start[r], sub_start[r + 1]):
                    m = sub_masks[k]
                    if s & m == m:
                        c += 1
                counts[node] = c
                node += 1
    return counts


@njit(cache=True)
def fill_moves(
    ids: np.ndarray,
    index_of: np.ndarray,
    roll_ok: np.ndarray,
    sub_masks: np.ndarray,
    sub_start: np.ndarray,
    starts: np.ndarray,
    mv_dst: np.ndarray,
    mv_label: np.ndarray,
    mv_scale: np.ndarray,
) -> None:
    """Write each node's moves (successor index, tiles mask, scale 1) from its start slot."""
    n_states, width = roll_ok.shape
    node = 0
    for i in range(n_states):
        s = ids[i]
        for r in range(width):
            if roll_ok[i, r]:
                pos = starts[node]
                for k in range(sub_start[r], sub_start[r + 1]):
                    m = sub_masks[k]
                    if s & m == m:
                        mv_dst[pos] = index_of[s ^ m]
                        mv_label[pos] = m
                        mv_scale[pos] = 1
                        pos += 1
                node += 1
