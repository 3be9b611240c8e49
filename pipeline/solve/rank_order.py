"""Backward induction over an acyclic game graph, one rank (layer) at a time, vectorised."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pipeline.graph import Graph, group_starts
from pipeline.solve.tolerance import ties


@dataclass(frozen=True)
class Solution:
    """Values of a solved graph, aligned with the graph's arrays."""

    value: np.ndarray
    """float64 [S]: value of each state under optimal play."""
    choice: np.ndarray
    """int64 [S]: the optimal choice before the roll (-1 for terminal states)."""
    n_choices: np.ndarray
    """int64 [S]: how many choices the state offers."""
    node_value: np.ndarray
    """float64 [N]: value of each decision node after the best move."""
    move_value: np.ndarray
    """float64 [M]: value of each move row."""
    iterations: int = 0
    """Sweeps used (value iteration only; 0 for backward induction)."""
    residual: float = 0.0
    """Largest change in the last sweep (value iteration only)."""


def reduce_best(values: np.ndarray, starts: np.ndarray, maximise: bool) -> np.ndarray:
    """Best value of each run of ``values`` starting at ``starts``."""
    if values.shape[0] == 0:
        return values
    op = np.maximum if maximise else np.minimum
    return op.reduceat(values, starts)


Index = np.ndarray | slice


def backup_nodes(
    g: Graph, value: np.ndarray, moves: Index, move_value: np.ndarray, node_value: np.ndarray
) -> None:
    """Recompute the value of the moves ``moves`` (grouped by node) and of their nodes."""
    nodes = g.mv_node[moves]
    if nodes.shape[0] == 0:
        return
    dst = g.mv_dst[moves]
    succ = np.where(dst >= 0, value[np.maximum(dst, 0)], 0.0)
    vals = g.mv_offset[moves] + g.mv_scale[moves] * succ
    move_value[moves] = vals
    starts = group_starts(nodes)
    node_value[nodes[starts]] = reduce_best(vals, starts, g.maximise)


def backup_states(
    g: Graph,
    rows: Index,
    node_value: np.ndarray,
    prob: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Values of the states owning chance rows ``rows`` (grouped by state, then choice).

    Returns the states, their best value, the chosen choice and the number of choices.
    Ties between choices go to the largest choice (for dice: the usual number of dice).
    """
    contrib = prob[rows] * node_value[g.ch_node[rows]]
    states = g.ch_state[rows].astype(np.int64)
    choices = g.ch_choice[rows]
    key_starts = group_starts(states.astype(np.int64) * (1 << 20) + choices)
    group_value = np.add.reduceat(contrib, key_starts)
    group_state = states[key_starts]
    group_choice = choices[key_starts]
    state_starts = group_starts(group_state)
    best = reduce_best(group_value, state_starts, g.maximise)
    n_choices = np.diff(np.append(state_starts, group_value.shape[0]))
    per_group_best = np.repeat(best, n_choices)
    near = ties(group_value, per_group_best)
    chosen = np.maximum.reduceat(np.where(near, group_choice, -1), state_starts)
    return group_state[state_starts], best, chosen, n_choices


def layers(keys: np.ndarray, order: np.ndarray) -> list[Index]:
    """Split positions into groups of equal layer key, in the order of ``order``.

    Sorted keys give slices (views, no copies); otherwise index arrays that keep the original
    order inside each layer.
    """
    if bool(np.all(np.diff(keys) >= 0)):
        edges = [*np.searchsorted(keys, order, side="left").tolist(), keys.shape[0]]
        return [slice(edges[i], edges[i + 1]) for i in range(order.shape[0])]
    perm = np.argsort(keys, kind="stable")
    ends = np.append(np.searchsorted(keys[perm], order, side="left"), perm.shape[0])
    return [perm[ends[i] : ends[i + 1]] for i in range(order.shape[0])]


def solve_rank_order(g: Graph, progress: Callable[[int, int], None] | None = None) -> Solution:
    """Solve an acyclic graph exactly (in floating point) by backward induction in rank order.

    ``progress(done, total)`` is called after each rank when given.
    """
    s = g.n_states
    value = np.full(s, np.nan)
    choice = np.full(s, -1, dtype=np.int64)
    n_choices = np.zeros(s, dtype=np.int64)
    node_value = np.full(g.node_state.shape[0], np.nan)
    move_value = np.full(g.mv_node.shape[0], np.nan)
    prob = g.ch_prob
    ranks = np.unique(g.rank)
    node_rank = g.rank[g.node_state]
    state_layers = layers(g.rank, ranks)
    move_layers = layers(node_rank[g.mv_node], ranks)
    chance_layers = layers(g.rank[g.ch_state], ranks)
    for i in range(ranks.shape[0]):
        in_layer = np.arange(s)[state_layers[i]]
        term = in_layer[~np.isnan(g.terminal[in_layer])]
        value[term] = g.terminal[term]
        backup_nodes(g, value, move_layers[i], move_value, node_value)
        if g.ch_node[chance_layers[i]].shape[0]:
            states, best, chosen, count = backup_states(g, chance_layers[i], node_value, prob)
            value[states] = best
            choice[states] = chosen
            n_choices[states] = count
        if progress is not None:
            progress(i + 1, ranks.shape[0])
    if np.any(np.isnan(value)):
        raise ValueError("graph is not acyclic in rank order: some states were never valued")
    return Solution(value, choice, n_choices, node_value, move_value)


def best_moves(g: Graph, sol: Solution) -> tuple[np.ndarray, np.ndarray]:
    """For each node: the index of its best move row, and how many moves tie for best.

    Ties (within :data:`TIE_TOLERANCE`, relative) go to the largest move label.
    """
    from pipeline.solve.ties import best_moves_compiled  # numba: compiled on first use

    return best_moves_compiled(g, sol.move_value, sol.node_value)
