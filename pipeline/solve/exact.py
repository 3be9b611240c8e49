"""Backward induction in exact rational arithmetic, for checking the float solver on small games."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from pipeline.graph import Graph

MAX_EXACT_MOVES = 2_000_000


def solve_exact(g: Graph) -> list[Fraction]:
    """Value of every state as a Fraction, by backward induction in rank order.

    Offsets and scales are read as exact binary fractions, so games should use values such as
    0, 1, 1/2 or integer scores there. Plain Python: meant for graphs of up to a few million moves.
    """
    if g.mv_node.shape[0] > MAX_EXACT_MOVES:
        raise ValueError(
            f"exact mode is for small games: {g.mv_node.shape[0]:,} moves exceed "
            f"{MAX_EXACT_MOVES:,}"
        )
    better = max if g.maximise else min
    value: list[Fraction | None] = [None] * g.n_states
    move_start = g.move_starts().tolist()
    ch_bounds = np.searchsorted(g.ch_state, np.arange(g.n_states + 1)).tolist()
    dst = g.mv_dst.tolist()
    offset = [Fraction(x) for x in g.mv_offset.tolist()]
    scale = [Fraction(x) for x in g.mv_scale.tolist()]
    ch_choice = g.ch_choice.tolist()
    ch_node = g.ch_node.tolist()
    ch_prob = [Fraction(int(c), int(d)) for c, d in zip(g.ch_count, g.ch_denom, strict=True)]
    for s in np.argsort(g.rank, kind="stable").tolist():
        if not np.isnan(g.terminal[s]):
            value[s] = Fraction(float(g.terminal[s]))
            continue
        by_choice: dict[int, Fraction] = {}
        for row in range(ch_bounds[s], ch_bounds[s + 1]):
            node = ch_node[row]
            q = better(
                offset[m] + (scale[m] * value[dst[m]] if dst[m] >= 0 else 0)
                for m in range(move_start[node], move_start[node + 1])
            )
            by_choice[ch_choice[row]] = (
                by_choice.get(ch_choice[row], Fraction(0)) + ch_prob[row] * q
            )
        value[s] = better(by_choice.values())
    return value  # type: ignore[return-value]
