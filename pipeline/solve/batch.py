"""Backward induction for many objectives over one graph at once (a column per objective).

Some questions need the same game solved under several reward schemes, e.g. "maximise P(final
score <= n)" for n = 0..20. The moves, chance rows and ranks are the same for all of them; only the
values of ending the game differ. Solving them together as a [states, K] value matrix shares the
walk over the graph: one compiled pass over the rank layers, K values per state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.graph import Graph, as_index
from pipeline.solve.compiled import inline_kernel, kernel
from pipeline.solve.policy_eval import plan
from pipeline.solve.ties import best_of, pick


@dataclass(frozen=True)
class BatchSolution:
    """Values of a graph solved under K objectives; column k belongs to objective k."""

    value: np.ndarray
    """float64 [S, K]: value of each state under optimal play for each objective."""
    choice: np.ndarray
    """int64 [S, K]: the optimal choice before the roll (-1 for terminal states)."""


def solve_rank_order_batch(g: Graph, terminal: np.ndarray, ended: np.ndarray) -> BatchSolution:
    """Solve ``g`` for K objectives at once by backward induction in rank order.

    ``terminal`` (float64 [S, K]) replaces ``g.terminal`` (NaN where play goes on), and
    ``ended`` (float64 [S, K]) is the value of a move that ends the game (``dst < 0``: a pass
    when no tile can be shut) from each state, in place of that move's ``g.mv_offset``; the
    other moves keep their offsets and scales, and ``g.maximise`` holds for every objective.
    Ties between choices go to the largest choice, as in
    :func:`pipeline.solve.rank_order.solve_rank_order`; each node's moves and each state's rolls
    are taken in row order.
    """
    s, k = g.n_states, terminal.shape[1]
    if terminal.shape != (s, k) or ended.shape != (s, k):
        raise ValueError("terminal and ended must have one row per state and one column per goal")
    if g.cyclic:
        raise ValueError("backward induction runs in rank order, so it needs an acyclic graph")
    value = np.full((s, k), np.nan)
    choice = np.full((s, k), -1, dtype=np.int64)
    node_value = np.full((g.node_state.shape[0], k), np.nan)
    ch_choice = as_index(g.ch_choice)
    # a state's choices are distinct numbers: at most the largest plus one of them
    most = int(ch_choice.max()) + 1 if ch_choice.shape[0] else 1
    _solve_layers(  # type: ignore[call-arg]  # numba's stub does not see *args
        *plan(g).flat,
        np.ascontiguousarray(terminal, dtype=np.float64),
        np.ascontiguousarray(ended, dtype=np.float64),
        as_index(g.mv_dst),
        as_index(g.mv_node),
        as_index(g.node_state),
        g.mv_offset,
        g.mv_scale.astype(np.float64),
        as_index(g.ch_state),
        ch_choice,
        as_index(g.ch_node),
        g.ch_prob,
        g.maximise,
        value,
        choice,
        node_value,
        # room for one state's choices (sums per objective, labels), the best, the choice
        np.zeros((k, most)),
        np.zeros(most, dtype=np.int64),
        np.zeros(k),
        np.zeros(k, dtype=np.int64),
    )
    if np.any(np.isnan(value)):
        raise ValueError("graph is not acyclic in rank order: some states were never valued")
    return BatchSolution(value, choice)


@kernel
def _solve_layers(
    states, states_off, moves, moves_off, chance, chance_off,
    terminal, ended, dst, mv_node, node_state, offset, scale,
    ch_state, ch_choice, ch_node, prob, maximise, value, choice, node_value, sums, labels, best,
    tied,
):  # fmt: skip
    k_all = terminal.shape[1]
    for layer in range(states_off.shape[0] - 1):
        for j in range(states_off[layer], states_off[layer + 1]):
            i = states[j]
            for k in range(k_all):
                if not np.isnan(terminal[i, k]):
                    for x in range(k_all):
                        value[i, x] = terminal[i, x]
                    break
        group = -1
        for j in range(moves_off[layer], moves_off[layer + 1]):
            m = moves[j]
            n = mv_node[m]
            first = n != group
            group = n
            for k in range(k_all):
                if dst[m] >= 0:
                    v = offset[m] + scale[m] * value[dst[m], k]
                else:
                    v = ended[node_state[n], k]
                if first or (v > node_value[n, k] if maximise else v < node_value[n, k]):
                    node_value[n, k] = v
        j = chance_off[layer]
        while j < chance_off[layer + 1]:
            owner = ch_state[chance[j]]
            end = j
            while end < chance_off[layer + 1] and ch_state[chance[end]] == owner:
                end += 1
            _choose(chance, j, end, ch_choice, ch_node, prob, node_value, maximise, sums, labels,
                    best, tied)  # fmt: skip
            for k in range(k_all):
                value[owner, k] = best[k]
                choice[owner, k] = tied[k]
            j = end


@inline_kernel  # once per state: compiled as part of its caller
def _choose(chance, j, end, ch_choice, ch_node, prob, node_value, maximise, sums, labels,
            best, tied):  # fmt: skip
    """Over the choices of one state's chance rows ``chance[j:end]`` (grouped by choice), per
    objective: the best value into ``best``, and the tie rule's choice (the largest within the
    tie tolerance of it: :func:`pipeline.solve.tolerance.pick`) into ``tied``, -1 when none.

    ``sums`` (float64 [K, choices]) and ``labels`` (int64 [choices]): room for the state's
    choices, each choice's sums taken in row order; a row per objective, so that the tie rule
    reads each objective's sums as one contiguous array."""
    k_all = best.shape[0]
    n = 0
    i = j
    while i < end:
        c = ch_choice[chance[i]]
        labels[n] = c
        r = chance[i]
        for k in range(k_all):
            sums[k, n] = prob[r] * node_value[ch_node[r], k]
        i += 1
        while i < end and ch_choice[chance[i]] == c:
            r = chance[i]
            for k in range(k_all):
                sums[k, n] += prob[r] * node_value[ch_node[r], k]
            i += 1
        n += 1
    for k in range(k_all):
        top = best_of(sums[k], 0, n, maximise)
        best[k] = top
        chosen = pick(sums[k], labels, 0, n, top)[0]
        tied[k] = labels[chosen] if chosen >= 0 else -1
