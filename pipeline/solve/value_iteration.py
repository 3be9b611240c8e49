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

import numba
import numpy as np

from pipeline.graph import Graph
from pipeline.solve.rank_order import Solution
from pipeline.solve.ties import best_of, pick

#: Stop once no state changed by more than this in a sweep.
DEFAULT_TOLERANCE = 1e-12
DEFAULT_MAX_SWEEPS = 10_000


@numba.njit(cache=True)
def _node_best(node, mv_start, mv_dst, mv_scale, mv_offset, value, sign):
    """Best move value of one decision node (sign +1 maximises, -1 minimises)."""
    best = -np.inf
    for m in range(mv_start[node], mv_start[node + 1]):
        d = mv_dst[m]
        v = mv_offset[m] + (mv_scale[m] * value[d] if d >= 0 else 0.0)
        if sign * v > best:
            best = sign * v
    return sign * best


@numba.njit(cache=True)
def _state_value(s, ch_start, ch_choice, ch_node, prob, mv_start, mv_dst, mv_scale, mv_offset,
                 value, sign):  # fmt: skip
    """Best value over the choices of state s (chance rows grouped by choice)."""
    best = -np.inf
    i = ch_start[s]
    end = ch_start[s + 1]
    while i < end:
        c = ch_choice[i]
        total = 0.0
        while i < end and ch_choice[i] == c:
            total += prob[i] * _node_best(
                ch_node[i], mv_start, mv_dst, mv_scale, mv_offset, value, sign
            )
            i += 1
        if sign * total > best:
            best = sign * total
    return sign * best


@numba.njit(cache=True)
def _sweep(order, ch_start, ch_choice, ch_node, prob, mv_start, mv_dst, mv_scale, mv_offset,
           value, sign):  # fmt: skip
    """One Gauss-Seidel sweep over ``order``, in place; returns the largest change."""
    residual = 0.0
    for k in range(order.shape[0]):
        s = order[k]
        new = _state_value(
            s, ch_start, ch_choice, ch_node, prob, mv_start, mv_dst, mv_scale, mv_offset,
            value, sign,
        )  # fmt: skip
        change = abs(new - value[s])
        if change > residual:
            residual = change
        value[s] = new
    return residual


def solve_value_iteration(
    g: Graph,
    tol: float = DEFAULT_TOLERANCE,
    max_sweeps: int = DEFAULT_MAX_SWEEPS,
    progress: Callable[[int, float], None] | None = None,
) -> Solution:
    """Solve a graph (cycles allowed) by Gauss-Seidel value iteration in increasing rank order.

    Sweeps until the largest change of a sweep is at most ``tol`` (absolute); raises ValueError
    if ``max_sweeps`` is reached first. ``progress(sweep, residual)`` is called after each sweep.
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
    residual, sweeps = np.inf, 0
    while residual > tol:
        if sweeps >= max_sweeps:
            raise ValueError(f"value iteration did not converge in {max_sweeps} sweeps")
        residual = _sweep(
            order, ch_start, choice, g.ch_node, prob, mv_start, g.mv_dst, scale, offset,
            value, sign,
        )  # fmt: skip
        sweeps += 1
        if progress is not None:
            progress(sweeps, residual)
    node_value, move_value = _node_and_move_values(g, value, mv_start, scale, offset, sign)
    best_choice, n_choices = _choices(g, node_value, prob)
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


def _node_and_move_values(
    g: Graph,
    value: np.ndarray,
    mv_start: np.ndarray,
    scale: np.ndarray,
    offset: np.ndarray,
    sign: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Every move's value and every node's best, from the converged state values."""
    move_value = np.empty(g.mv_node.shape[0])
    node_value = np.empty(g.node_state.shape[0])
    _fill_moves(g.mv_dst, scale, offset, value, mv_start, sign, move_value, node_value)
    return node_value, move_value


@numba.njit(cache=True)
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


def _choices(g: Graph, node_value: np.ndarray, prob: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The best choice of each state (ties to the largest) and how many choices it has."""
    s = g.n_states
    best_choice = np.full(s, -1, dtype=np.int64)
    n_choices = np.zeros(s, dtype=np.int64)
    _fill_choices(
        np.searchsorted(g.ch_state, np.arange(s + 1)).astype(np.int64),
        _lean(g.ch_choice, np.int64),
        g.ch_node,
        prob,
        node_value,
        1.0 if g.maximise else -1.0,
        best_choice,
        n_choices,
    )
    return best_choice, n_choices


@numba.njit(cache=True)
def _fill_choices(ch_start, ch_choice, ch_node, prob, node_value, sign, best_choice, n_choices):
    """Per state: the value of each choice, the best (ties, by the tie rule, to the largest)."""
    most = int(np.max(ch_choice)) + 1 if ch_choice.shape[0] else 1
    totals = np.empty(most)  # one state's choices (each a distinct number: at most ``most``)
    labels = np.empty(most, dtype=np.int64)
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
            best_choice[s] = labels[chosen]
            n_choices[s] = count
