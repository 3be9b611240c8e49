"""Compiled loops that list Shut the Box moves straight into node order (numba).

For every decision node (state, roll) the legal moves are the sets of tiles with sum ``roll`` that
are all open. The candidate sets for each roll are few (at most a few dozen), so one pass over
the nodes checking each candidate is fast compiled, and writes every move into its final slot.
"""

from __future__ import annotations

import numpy as np

from pipeline.solve.compiled import kernel


def count_moves(
    ids: np.ndarray, roll_ok: np.ndarray, sub_masks: np.ndarray, sub_start: np.ndarray
) -> np.ndarray:
    """Number of legal moves of every node, nodes in (state index, roll) order."""
    counts = np.zeros(int(roll_ok.sum()), dtype=np.int32)
    # empty stand-ins of the fill pass's arrays, of its types: one signature serves both passes
    index_of, starts = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    dst, label, scale = np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int8)
    _node_moves(ids, index_of, roll_ok, sub_masks, sub_start, starts, counts, dst, label, scale,
                False)  # fmt: skip
    return counts


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
    counts = np.zeros(0, dtype=np.int32)
    _node_moves(
        ids, index_of, roll_ok, sub_masks, sub_start, starts, counts, mv_dst, mv_label, mv_scale,
        True,
    )  # fmt: skip


@kernel
def _node_moves(
    ids: np.ndarray,
    index_of: np.ndarray,
    roll_ok: np.ndarray,
    sub_masks: np.ndarray,
    sub_start: np.ndarray,
    starts: np.ndarray,
    counts: np.ndarray,
    mv_dst: np.ndarray,
    mv_label: np.ndarray,
    mv_scale: np.ndarray,
    fill: bool,
) -> None:
    """Both passes in one kernel (a first run compiles one): without ``fill``, count each
    node's legal moves into ``counts``; with it, write them from ``starts[node]`` on."""
    n_states, width = roll_ok.shape
    node = 0
    for i in range(n_states):
        s = ids[i]
        for r in range(width):
            if roll_ok[i, r]:
                pos = starts[node] if fill else 0
                c = 0
                for k in range(sub_start[r], sub_start[r + 1]):
                    m = sub_masks[k]
                    if s & m == m:
                        if fill:
                            mv_dst[pos] = index_of[s ^ m]
                            mv_label[pos] = m
                            mv_scale[pos] = 1
                            pos += 1
                        c += 1
                if not fill:
                    counts[node] = c
                node += 1
