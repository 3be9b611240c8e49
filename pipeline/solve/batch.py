"""Backward induction for many objectives over one graph at once (a column per objective).

Some questions need the same game solved under several reward schemes, e.g. "maximise P(final
score <= n)" for n = 0..20. The moves, chance rows and ranks are the same for all of them; only the
values of ending the game differ. Solving them together as a [states, K] value matrix shares every
index computation and turns K Python loops over the ranks into one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pipeline.graph import Graph, group_starts
from pipeline.solve.rank_order import layers
from pipeline.solve.tolerance import tolerance


@dataclass(frozen=True)
class BatchSolution:
    """Values of a graph solved under K objectives; column k belongs to objective k."""

    value: np.ndarray
    """float64 [S, K]: value of each state under optimal play for each objective."""
    choice: np.ndarray
    """int64 [S, K]: the optimal choice before the roll (-1 for terminal states)."""


def solve_rank_order_batch(
    g: Graph,
    terminal: np.ndarray,
    offsets: Callable[[np.ndarray], np.ndarray],
) -> BatchSolution:
    """Solve ``g`` for K objectives at once by backward induction in rank order.

    ``terminal`` (float64 [S, K]) replaces ``g.terminal`` (NaN where play goes on), and
    ``offsets(rows)`` returns the float64 [len(rows), K] offsets of the given move rows, which
    replace ``g.mv_offset``; scales, moves and ``g.maximise`` are shared. Offsets are asked for
    one rank at a time, so a [moves, K] matrix is never held whole. Ties between choices go to the
    largest choice, as in :func:`pipeline.solve.rank_order.solve_rank_order`.
    """
    s, k = g.n_states, terminal.shape[1]
    if terminal.shape != (s, k):
        raise ValueError("terminal must have one row per state")
    op = np.maximum if g.maximise else np.minimum
    value = np.full((s, k), np.nan)
    choice = np.full((s, k), -1, dtype=np.int64)
    node_value = np.full((g.node_state.shape[0], k), np.nan)
    prob = g.ch_prob
    ranks = np.unique(g.rank)
    state_layers = layers(g.rank, ranks)
    move_layers = layers(g.rank[g.node_state][g.mv_node], ranks)
    chance_layers = layers(g.rank[g.ch_state], ranks)
    # Layers are slices when the graph is sorted by rank and index arrays otherwise: make them
    # index arrays here, since the loop filters and gathers with them.
    n_moves, n_rows = g.mv_node.shape[0], g.ch_state.shape[0]
    for i in range(ranks.shape[0]):
        states = _indices(state_layers[i], s)
        term = states[~np.isnan(terminal[states]).any(axis=1)]
        value[term] = terminal[term]
        moves = _indices(move_layers[i], n_moves)
        if moves.shape[0]:
            dst = g.mv_dst[moves]
            succ = np.where((dst >= 0)[:, None], value[np.maximum(dst, 0)], 0.0)
            vals = offsets(moves) + g.mv_scale[moves][:, None] * succ
            nodes = g.mv_node[moves]
            starts = group_starts(nodes)
            node_value[nodes[starts]] = reduceat_columns(op, vals, starts)
        rows = _indices(chance_layers[i], n_rows)
        if rows.shape[0]:
            owner, best, chosen = _backup_states(g, rows, node_value, prob, op)
            value[owner] = best
            choice[owner] = chosen
    if np.any(np.isnan(value)):
        raise ValueError("graph is not acyclic in rank order: some states were never valued")
    return BatchSolution(value, choice)


def _indices(layer: np.ndarray | slice, n: int) -> np.ndarray:
    """A layer as an index array (a slice becomes the range it covers)."""
    if isinstance(layer, slice):
        return np.arange(*layer.indices(n))
    return layer


def _backup_states(
    g: Graph,
    rows: np.ndarray,
    node_value: np.ndarray,
    prob: np.ndarray,
    op: np.ufunc,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """States owning chance rows ``rows``, their best value and choice per objective."""
    contrib = prob[rows][:, None] * node_value[g.ch_node[rows]]
    states = g.ch_state[rows]
    choices = g.ch_choice[rows]
    key_starts = group_starts(states * (1 << 20) + choices)
    group_value = reduceat_columns(np.add, contrib, key_starts)
    group_state = states[key_starts]
    group_choice = choices[key_starts]
    state_starts = group_starts(group_state)
    best = reduceat_columns(op, group_value, state_starts)
    sizes = np.diff(np.append(state_starts, group_value.shape[0]))
    per_group_best = np.repeat(best, sizes, axis=0)
    near = np.abs(group_value - per_group_best) <= tolerance(per_group_best)
    chosen = reduceat_columns(np.maximum, np.where(near, group_choice[:, None], -1), state_starts)
    return group_state[state_starts], best, chosen


def reduceat_columns(op: np.ufunc, x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``op.reduceat(x, starts, axis=0)`` for a 2-D ``x``, one contiguous column at a time.

    numpy's 2-D reduceat along axis 0 is several times slower than K 1-D calls.
    """
    columns = np.ascontiguousarray(x.T)
    return np.stack([op.reduceat(col, starts) for col in columns], axis=1)
