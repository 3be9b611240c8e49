"""Value iteration for game graphs with cycles (Gauss-Seidel sweeps, compiled with numba).

Rank-order backward induction needs every move to lead to a lower rank. Where moves can lead
back to earlier positions (Knucklebones removals), the values are the fixed point of the Bellman
equations instead. Each sweep updates every non-terminal state in place, in increasing rank
order: for games whose moves *usually* lower the rank, most successors are then already up to
date within the same sweep, so a sweep does most of the work of a full backward induction and
only the cycles need the repeats. The iteration converges for graphs in which play ends with
probability one under any policy (then the Bellman operator is a contraction over enough steps).

The result is the same :class:`~pipeline.solve.rank_order.Solution` as rank order (with the
number of sweeps and the last sweep's largest change), so stages and tables do not care which
solver ran.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pipeline.graph import Graph, as_index
from pipeline.solve.compiled import inline_kernel, kernel
from pipeline.solve.rank_order import Solution
from pipeline.solve.ties import best_of, pick

#: Stop once no state changed by more than this in a sweep.
TOLERANCE = 1e-12
MAX_SWEEPS = 10_000


@kernel
def _sweep(order, ch_start, ch_choice, ch_node, prob, mv_start, mv_dst, mv_scale, mv_offset,
           value, sign):  # fmt: skip
    """One Gauss-Seidel sweep over ``order``, in place; returns the largest change.

    A state's value is the best over its choices (chance rows grouped by choice) of the sum of
    each roll's best move value (``sign`` +1 maximises, -1 minimises). One kernel, not one per
    level: each kernel compiles on its own, and a first run pays for each."""
    residual = 0.0
    for k in range(order.shape[0]):
        s = order[k]
        new = -np.inf
        i = ch_start[s]
        end = ch_start[s + 1]
        while i < end:
            c = ch_choice[i]
            total = 0.0
            while i < end and ch_choice[i] == c:
                node = ch_node[i]
                best = -np.inf
                for m in range(mv_start[node], mv_start[node + 1]):
                    d = mv_dst[m]
                    v = mv_offset[m] + (mv_scale[m] * value[d] if d >= 0 else 0.0)
                    if sign * v > best:
                        best = sign * v
                total += prob[i] * (sign * best)
                i += 1
            if sign * total > new:
                new = sign * total
        new = sign * new
        change = abs(new - value[s])
        if change > residual:
            residual = change
        value[s] = new
    return residual


def solve_value_iteration(
    g: Graph, progress: Callable[[int, float], None] | None = None
) -> Solution:
    """Solve a graph (cycles allowed) by Gauss-Seidel value iteration in increasing rank order.

    Sweeps until the largest change of a sweep is at most :data:`TOLERANCE` (absolute); raises
    ValueError after :data:`MAX_SWEEPS` sweeps. ``progress(sweep, residual)`` is called after
    each sweep.
    """
    s = g.n_states
    terminal = ~np.isnan(g.terminal)
    value = np.where(terminal, g.terminal, 0.0)
    live = np.flatnonzero(~terminal)
    order = live[np.argsort(g.rank[live], kind="stable")]
    ch_start = np.searchsorted(g.ch_state, np.arange(s + 1)).astype(np.int64)
    mv_start = g.move_starts().astype(np.int64)
    prob = _probabilities(g)
    choice = _lean(g.ch_choice, np.int64)
    scale = _lean(g.mv_scale, np.float64)
    offset = _lean(g.mv_offset, np.float64)
    sign = 1.0 if g.maximise else -1.0
    ch_node, mv_dst = as_index(g.ch_node), as_index(g.mv_dst)
    residual, sweeps = np.inf, 0
    while residual > TOLERANCE:
        if sweeps >= MAX_SWEEPS:
            raise ValueError(f"value iteration did not converge in {MAX_SWEEPS} sweeps")
        residual = _sweep(
            order, ch_start, choice, ch_node, prob, mv_start, mv_dst, scale, offset, value, sign,
        )  # fmt: skip
        sweeps += 1
        if progress is not None:
            progress(sweeps, residual)
    move_value = np.empty(g.mv_node.shape[0])
    node_value = np.empty(g.node_state.shape[0])
    best_choice = np.full(s, -1, dtype=np.int64)
    n_choices = np.zeros(s, dtype=np.int64)
    # room for one state's choices (distinct numbers: at most the largest plus one of them)
    most = int(choice.max()) + 1 if choice.shape[0] else 1
    _finish(
        mv_dst, scale, offset, value, mv_start, ch_start, choice, ch_node, prob, sign,
        move_value, node_value, best_choice, n_choices, np.zeros(most), np.zeros(most, np.int64),
    )  # fmt: skip
    return Solution(value, best_choice, n_choices, node_value, move_value, sweeps, float(residual))


def _is_constant(a: np.ndarray) -> bool:
    """Whether ``a`` is one value broadcast along its length (stride 0, no memory per row)."""
    return a.ndim == 1 and a.shape[0] > 0 and a.strides[0] == 0


def _lean(a: np.ndarray, dtype: type) -> np.ndarray:
    """``a`` as ``dtype`` for the compiled loops without a copy per row when it is constant
    (graphs of tens of millions of moves give constant columns as ``np.broadcast_to`` views)."""
    if _is_constant(a):
        return np.broadcast_to(np.asarray(a[0], dtype=dtype), a.shape)
    return np.ascontiguousarray(a, dtype=dtype)


def _probabilities(g: Graph) -> np.ndarray:
    """Each chance row's probability (a broadcast view when every row has the same one)."""
    if _is_constant(g.ch_count) and _is_constant(g.ch_denom):
        return np.broadcast_to(np.float64(g.ch_count[0] / g.ch_denom[0]), g.ch_count.shape)
    return np.ascontiguousarray(g.ch_prob, dtype=np.float64)


@kernel
def _finish(
    mv_dst, scale, offset, value, mv_start, ch_start, ch_choice, ch_node, prob, sign,
    move_value, node_value, best_choice, n_choices, totals, labels,
):  # fmt: skip
    """From the converged state values: every move's value and every node's best, then each
    state's best choice and number of choices (one kernel: each compiles on its own;
    ``totals``, ``labels``: room for one state's choices)."""
    _fill_moves(mv_dst, scale, offset, value, mv_start, sign, move_value, node_value)
    _fill_choices(ch_start, ch_choice, ch_node, prob, node_value, sign, best_choice, n_choices,
                  totals, labels)  # fmt: skip


@inline_kernel
def _fill_moves(mv_dst, scale, offset, value, mv_start, sign, move_value, node_value):
    """Move values and node bests, node by node (no temporaries the size of the move arrays)."""
    for n in range(mv_start.shape[0] - 1):
        best = -np.inf
        for m in range(mv_start[n], mv_start[n + 1]):
            d = mv_dst[m]
            v = offset[m] + (scale[m] * value[d] if d >= 0 else 0.0)
            move_value[m] = v
            if sign * v > best:
                best = sign * v
        node_value[n] = sign * best


@inline_kernel
def _fill_choices(ch_start, ch_choice, ch_node, prob, node_value, sign, best_choice, n_choices,
                  totals, labels):  # fmt: skip
    """Per state: the value of each choice, the best (ties, by the tie rule, to the largest);
    ``totals`` and ``labels``: the caller's room for one state's choices."""
    for s in range(ch_start.shape[0] - 1):
        i, end = ch_start[s], ch_start[s + 1]
        count = 0
        while i < end:
            c = ch_choice[i]
            total = 0.0
            while i < end and ch_choice[i] == c:
                total += prob[i] * node_value[ch_node[i]]
                i += 1
            totals[count], labels[count] = sign * total, c
            count += 1
        if count:
            chosen, _ = pick(totals, labels, 0, count, best_of(totals, 0, count, True))
            best_choice[s] = labels[chosen] if chosen >= 0 else -1
            n_choices[s] = count
