"""Compiled loops of Shut the Box (numba): the rules of one state, and the moves in node order.

The dice rule and the final value are :mod:`pipeline.games.shutbox.rules`' scalar functions,
compiled here for the kernels, with their array forms over many states.

For every decision node (state, roll) the legal moves are the sets of tiles with sum ``roll`` that
are all open. The candidate sets for each roll are few (at most a few dozen), so one pass over
the nodes checking each candidate is fast compiled, and writes every move into its final slot.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.games.shutbox import rules

final_score = njit(cache=True)(rules.final_score)
objective_value = njit(cache=True)(rules.objective_value)
dice_pattern = njit(cache=True)(rules.dice_pattern)


@njit(cache=True)
def stuck_value(s: int, rule: np.ndarray) -> float:
    """The value of ending the game with the open tiles ``s``."""
    return objective_value(final_score(s, rule), rule)


@njit(cache=True)
def state_rules(ids: np.ndarray, rule: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The array forms: :func:`final_score`, :func:`stuck_value` and :func:`dice_pattern` of
    every state."""
    score = np.empty(ids.shape[0], dtype=np.int64)
    value = np.empty(ids.shape[0])
    pattern = np.empty(ids.shape[0], dtype=np.int64)
    for i in range(ids.shape[0]):
        score[i] = final_score(ids[i], rule)
        value[i] = objective_value(score[i], rule)
        pattern[i] = dice_pattern(ids[i], rule)
    return score, value, pattern


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
