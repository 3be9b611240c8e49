"""Compiled loops of Shut the Box (numba): the rules of one state, and the moves in node order.

The dice rule and the final value are :mod:`pipeline.games.shutbox.rules`' scalar functions,
compiled here for the kernels, with their array forms over many states.

For every decision node (state, roll) the legal moves are the sets of tiles with sum ``roll`` that
are all open. The candidate sets for each roll are few (at most a few dozen), so one pass over
the nodes checking each candidate is fast compiled, and writes every move into its final slot.
"""

from __future__ import annotations

import numpy as np

from pipeline.games.shutbox import rules
from pipeline.solve.compiled import kernel

final_score = kernel(rules.final_score)
objective_value = kernel(rules.objective_value)
dice_pattern = kernel(rules.dice_pattern)


@kernel
def stuck_value(s: int, rule: np.ndarray) -> float:
    """The value of ending the game with the open tiles ``s``."""
    return objective_value(final_score(s, rule), rule)


def state_rules(ids: np.ndarray, rule: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The array forms: :func:`final_score`, :func:`stuck_value` and :func:`dice_pattern` of
    every state."""
    score = np.empty(ids.shape[0], dtype=np.int64)
    value = np.empty(ids.shape[0])
    pattern = np.empty(ids.shape[0], dtype=np.int64)
    _state_rules(ids, rule, score, value, pattern)
    return score, value, pattern


@kernel
def _state_rules(
    ids: np.ndarray, rule: np.ndarray, score: np.ndarray, value: np.ndarray, pattern: np.ndarray
) -> None:
    for i in range(ids.shape[0]):
        score[i] = final_score(ids[i], rule)
        value[i] = objective_value(score[i], rule)
        pattern[i] = dice_pattern(ids[i], rule)


def count_moves(
    ids: np.ndarray, roll_ok: np.ndarray, sub_masks: np.ndarray, sub_start: np.ndarray
) -> np.ndarray:
    """Number of legal moves of every node, nodes in (state index, roll) order."""
    counts = np.zeros(int(roll_ok.sum()), dtype=np.int32)
    # empty stand-ins of the fill pass's arrays, of its types: one signature serves both passes
    index_of, starts = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    dst, label, scale = np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int8)
    node_moves(ids, index_of, roll_ok, sub_masks, sub_start, starts, counts, dst, label, scale,
                False)  # fmt: skip
    return counts


@kernel
def node_moves(
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
    node's legal moves into ``counts`` (:func:`count_moves`); with it, write each node's moves
    (successor index, tiles mask, scale 1) from ``starts[node]`` on (``counts`` empty)."""
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
