"""The ordering and shape invariants of a :class:`pipeline.graph.Graph` (its module docstring
states them), checked on the graphs the tests build."""

from __future__ import annotations

import numpy as np

from pipeline.graph import Graph


def check_graph(g: Graph) -> None:
    """Raise ValueError when an ordering or shape invariant does not hold."""
    s = g.n_states
    if not (g.rank.shape == g.terminal.shape == (s,)):
        raise ValueError("rank and terminal must have one entry per state")
    # int64 keys: index arrays may be int32 (large graphs), whose products would overflow.
    if np.any(np.diff(g.ch_state.astype(np.int64) * (1 << 20) + g.ch_choice) < 0):
        raise ValueError("chance rows must be sorted by (state, choice)")
    node_key = g.node_state.astype(np.int64) * (1 << 24) + g.node_roll
    if np.any(np.diff(node_key) <= 0):
        raise ValueError("decision nodes must be sorted by (state, roll) without repeats")
    if np.any(np.diff(g.mv_node) < 0):
        raise ValueError("moves must be sorted by node")
    counts = np.bincount(g.mv_node, minlength=g.node_state.shape[0])
    if np.any(counts == 0):
        raise ValueError("every decision node needs at least one move row")
    has_chance = np.zeros(s, dtype=bool)
    has_chance[g.ch_state] = True
    if np.any(np.isnan(g.terminal) & ~has_chance):
        raise ValueError("every non-terminal state needs chance rows")
