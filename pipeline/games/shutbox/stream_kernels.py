"""Compiled kernels of the streamed Shut the Box solve (numba); see shutbox_stream.

The rules reach the kernels as small arrays (a rule vector, dice counts, the candidate moves of
each roll, largest mask first). Each kernel handles one chunk of one layer (states with the same
number of open tiles), in parallel over its states (blocks of them on threads:
:mod:`pipeline.solve.threads`): a layer reads only lower layers' values.
"""

from __future__ import annotations

import math

import numpy as np

from pipeline.games.shutbox.kernels import dice_pattern, final_score, stuck_value
from pipeline.games.shutbox.rules import ONE, R_TILES, USUAL
from pipeline.solve import threads
from pipeline.solve.compiled import inline_kernel, kernel
from pipeline.solve.ties import is_tie, pick, regret

#: The policy columns the kernel fills: state_id (int64), roll (int16), best_move_mask (int32,
#: -1 when stuck), next_state_id (int64, -1 when stuck), value (float64), n_optimal (int16),
#: n_moves (int16), stuck (bool).
NodeColumns = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray
]
NODE_DTYPES = (np.int64, np.int16, np.int32, np.int64, np.float64, np.int16, np.int16, np.bool_)


def new_nodes(n: int) -> NodeColumns:
    """Empty policy columns for ``n`` nodes (see :data:`NodeColumns`)."""
    a, b, c, d, e, f, g, h = (np.empty(n, dtype=t) for t in NODE_DTYPES)
    return a, b, c, d, e, f, g, h


# -- per-state rules, compiled ---------------------------------------------------------------


@kernel
def _open_sum(s: int, tiles: int) -> int:
    total = 0
    for i in range(tiles):
        if (s >> i) & 1:
            total += i + 1
    return total


@kernel
def layer_ids(tiles: int, k: int, out: np.ndarray) -> None:
    """Every id with ``k`` of ``tiles`` bits set, increasing (Gosper's hack)."""
    if k == 0:
        out[0] = 0
        return
    s = (1 << k) - 1
    for i in range(out.shape[0]):
        out[i] = s
        low = s & -s
        ripple = s + low
        s = (((ripple ^ s) >> 2) // low) | ripple


# -- summation in NumPy's order --------------------------------------------------------------


@kernel
def _pairwise_block(a: np.ndarray, lo: int | np.int64, n: int | np.int64) -> float:
    """NumPy's pairwise_sum for n <= 128 (eight running sums, then a fixed tree)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - n % 8:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@kernel
def _reduceat_sum(a: np.ndarray, n: int | np.int64) -> float:
    """``np.add.reduceat`` of one run ``a[:n]``: the first term plus a pairwise sum of the rest.

    At most 8 dice of 20 sides give 153 totals, so one split of the pairwise sum suffices.
    """
    m = n - 1
    lo = np.int64(1)  # not the literal 1: numba would compile _pairwise_block for it as well
    if m <= 128:
        return a[0] + _pairwise_block(a, lo, m)
    half = m // 2
    half -= half % 8
    return a[0] + (_pairwise_block(a, lo, half) + _pairwise_block(a, lo + half, m - half))


# -- the layer kernel ------------------------------------------------------------------------


@kernel
def _node(
    s: int, r: int, value: np.ndarray, sub_masks: np.ndarray, sub_start: np.ndarray, maxi: bool
) -> tuple[float, int]:
    """Best successor value of state ``s`` after roll ``r``, and the number of legal moves."""
    best = 0.0
    found = 0
    for k in range(sub_start[r], sub_start[r + 1]):
        m = sub_masks[k]
        if s & m == m:
            v = value[s ^ m]
            if found == 0 or (v > best if maxi else v < best):
                best = v
            found += 1
    return best, found


@kernel
def _node_ties(
    s: int,
    r: int,
    value: np.ndarray,
    sub_masks: np.ndarray,
    sub_start: np.ndarray,
    maxi: bool,
    cand: np.ndarray,
) -> tuple[float, int, int, int]:
    """As :func:`_node`, plus the preferred best move (the largest mask within the tie
    tolerance, -1 when stuck) and how many moves tie; ``cand`` is scratch for the values."""
    best = 0.0
    found = 0
    lo = sub_start[r]
    for k in range(lo, sub_start[r + 1]):
        m = sub_masks[k]
        if s & m == m:
            v = value[s ^ m]
            cand[k - lo] = v
            if found == 0 or (v > best if maxi else v < best):
                best = v
            found += 1
        else:
            cand[k - lo] = np.nan  # never within the tolerance: not a legal move
    hi = sub_start[r + 1]
    chosen, n_opt = pick(cand, sub_masks[lo:hi], 0, hi - lo, best)  # the tie rule's
    return best, found, sub_masks[lo + chosen] if chosen >= 0 else -1, n_opt


@kernel
def _choose(
    g_one: float, g_usual: float, dice: np.ndarray, pattern: int, maxi: bool
) -> tuple[float, int]:
    """Best choice value and the chosen number of dice (ties to the larger number)."""
    if pattern == ONE:
        return g_one, dice[0]
    if pattern == USUAL:
        return g_usual, dice[1]
    best = max(g_one, g_usual) if maxi else min(g_one, g_usual)
    if is_tie(g_usual, best):
        return best, dice[1]
    return best, dice[0]


def chunk_scratch(
    ids: np.ndarray, count: np.ndarray, sub_start: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The scratch of :func:`solve_chunk` over ``ids``, a row a block (a few blocks a thread):
    each roll's node value and legal moves, and room for a node's candidates."""
    blocks, width = min(ids.shape[0], 64), count.shape[1]
    nv, nm = np.empty((blocks, width)), np.zeros((blocks, width), dtype=np.int64)
    return nv, nm, np.empty((blocks, max(int(np.diff(sub_start).max()), width)))


@threads.on_blocks
@kernel
def solve_chunk(
    b_lo: int,
    b_hi: int,
    nv_all: np.ndarray,
    nm_all: np.ndarray,
    scratch_all: np.ndarray,
    ids: np.ndarray,
    value: np.ndarray,
    rule: np.ndarray,
    count: np.ndarray,
    denom: np.ndarray,
    dice: np.ndarray,
    sub_masks: np.ndarray,
    sub_start: np.ndarray,
    maxi: bool,
    st_out: np.ndarray,
    node_start: np.ndarray,
    nodes: NodeColumns,
) -> None:
    """Solve the states ``ids`` (one layer or part of one), whose successors are all valued:
    here blocks ``b_lo`` to ``b_hi - 1`` of them, a block a row of the scratch
    (:func:`chunk_scratch`: block b's is row b of ``nv_all``, ``nm_all`` and ``scratch_all``).

    Writes ``value[s]``; per state, ``st_out[i] = (dice chosen, number of choices, legal moves
    over its rolls, edge rows)``. When ``node_start`` (per state, first node row, plus the end)
    is not empty, the (state, roll) nodes of state ``i`` fill rows ``node_start[i]`` on of the
    ``nodes`` columns (see :func:`new_nodes`), in increasing roll.
    """
    n, blocks = ids.shape[0], nv_all.shape[0]
    want_nodes = node_start.shape[0] > 0
    for b in range(b_lo, b_hi):
        nv, nm, scratch = nv_all[b], nm_all[b], scratch_all[b]
        for i in range(b * n // blocks, (b + 1) * n // blocks):
            s = ids[i]
            pattern = dice_pattern(s, rule)
            j = node_start[i] if want_nodes else -1
            moves = _state_nodes(
                s, pattern, value, rule, count, sub_masks, sub_start, maxi, nv, nm, scratch,
                nodes, j,
            )  # fmt: skip
            v, chosen, edges = _state_value(pattern, count, denom, dice, maxi, nv, nm, scratch)
            value[s] = v
            st_out[i, 0] = chosen
            st_out[i, 1] = 2 if pattern == ONE | USUAL else 1
            st_out[i, 2] = moves
            st_out[i, 3] = edges


@inline_kernel  # per state: compiled as part of its caller
def _state_nodes(
    s: int,
    pattern: int,
    value: np.ndarray,
    rule: np.ndarray,
    count: np.ndarray,
    sub_masks: np.ndarray,
    sub_start: np.ndarray,
    maxi: bool,
    nv: np.ndarray,
    nm: np.ndarray,
    scratch: np.ndarray,
    nodes: NodeColumns,
    j: int,
) -> int:
    """Value ``nv[r]`` and legal moves ``nm[r]`` of every roll state ``s`` can see; with
    ``j >= 0`` also its policy rows from row ``j`` on. Returns the number of legal moves."""
    stuck = stuck_value(s, rule)
    moves = 0
    for r in range(count.shape[1]):
        if not _rolls(pattern, count, r):
            continue
        if j >= 0:
            best, found, pick_, n_opt = _node_ties(s, r, value, sub_masks, sub_start, maxi, scratch)
            _put_node(nodes, j, s, r, best if found else stuck, pick_, n_opt, found)
            j += 1
        else:
            best, found = _node(s, r, value, sub_masks, sub_start, maxi)
        nv[r] = best if found else stuck
        nm[r] = found
        moves += found
    return moves


@inline_kernel  # per state: compiled as part of its caller
def _state_value(
    pattern: int,
    count: np.ndarray,
    denom: np.ndarray,
    dice: np.ndarray,
    maxi: bool,
    nv: np.ndarray,
    nm: np.ndarray,
    terms: np.ndarray,
) -> tuple[float, int, int]:
    """The state's value over its dice choices, the choice made, and its number of edge rows
    (each roll of each choice: its moves, or one pass row)."""
    g_one = 0.0  # value of rolling one die, then of the usual dice
    g_usual = 0.0
    edges = 0
    for c in range(2):
        if pattern & (ONE if c == 0 else USUAL):
            t = np.int64(0)  # not the literal 0, which numba would compile _reduceat_sum for
            for r in range(count.shape[1]):
                if count[c, r] > 0:
                    terms[t] = (count[c, r] / denom[c]) * nv[r]
                    t += 1
                    edges += max(nm[r], 1)
            if c == 0:
                g_one = _reduceat_sum(terms, t)
            else:
                g_usual = _reduceat_sum(terms, t)
    v, chosen = _choose(g_one, g_usual, dice, pattern, maxi)
    return v, chosen, edges


@kernel
def _rolls(pattern: int, count: np.ndarray, r: int) -> bool:
    """Whether a state with availability ``pattern`` can roll the total ``r``."""
    return ((pattern & ONE) != 0 and count[0, r] > 0) or (
        (pattern & USUAL) != 0 and count[1, r] > 0
    )


@kernel
def _put_node(
    nodes: NodeColumns, j: int, s: int, r: int, v: float, pick: int, n_opt: int, found: int
) -> None:
    """Write policy row ``j``."""
    state, roll, label, nxt, val, n_optimal, n_moves, stuck = nodes
    state[j] = s
    roll[j] = r
    label[j] = pick
    nxt[j] = s ^ pick if pick >= 0 else -1
    val[j] = v
    n_optimal[j] = n_opt
    n_moves[j] = found
    stuck[j] = pick < 0


def node_counts(ids: np.ndarray, rule: np.ndarray, per_pattern: np.ndarray) -> np.ndarray:
    """Number of (state, roll) nodes of each state: the rolls its choices can give."""
    out = np.empty(ids.shape[0], dtype=np.int64)
    _node_counts(ids, rule, per_pattern, out)
    return out


@threads.on_blocks
@kernel
def _node_counts(
    lo: int, hi: int, ids: np.ndarray, rule: np.ndarray, per_pattern: np.ndarray, out: np.ndarray
) -> None:
    for i in range(lo, hi):
        out[i] = per_pattern[dice_pattern(ids[i], rule)]


def layer_sizes(tiles: int) -> np.ndarray:
    """Number of states with k open tiles, k = 0..tiles (binomial coefficients)."""
    return np.array([math.comb(tiles, k) for k in range(tiles + 1)], dtype=np.int64)


@threads.on_blocks
@kernel
def fill_moves(
    lo: int,
    hi: int,
    ids: np.ndarray,
    value: np.ndarray,
    sub_masks: np.ndarray,
    sub_start: np.ndarray,
    maxi: bool,
    node_start: np.ndarray,
    nd_roll: np.ndarray,
    nd_label: np.ndarray,
    nd_value: np.ndarray,
    row_start: np.ndarray,
    mv_int: np.ndarray,
    mv_float: np.ndarray,
) -> None:
    """Every legal move of the chunk's nodes (states ``lo`` to ``hi - 1``) from ``row_start[i]``
    on, largest mask first: ``mv_int = (state, roll, mask, next state, is best)``,
    ``mv_float = (value, regret)``."""
    for i in range(lo, hi):
        s = ids[i]
        row = row_start[i]
        for j in range(node_start[i], node_start[i + 1]):
            r = nd_roll[j]
            best = nd_value[j]
            for k in range(sub_start[r], sub_start[r + 1]):
                m = sub_masks[k]
                if s & m == m:
                    v = value[s ^ m]
                    mv_int[row, 0] = s
                    mv_int[row, 1] = r
                    mv_int[row, 2] = m
                    mv_int[row, 3] = s ^ m
                    mv_int[row, 4] = m == nd_label[j]
                    mv_float[row, 0] = v
                    mv_float[row, 1] = regret(best, v, maxi)
                    row += 1


@threads.on_blocks
@kernel
def fill_edges(
    lo: int,
    hi: int,
    ids: np.ndarray,
    rule: np.ndarray,
    count: np.ndarray,
    denom: np.ndarray,
    dice: np.ndarray,
    sub_masks: np.ndarray,
    sub_start: np.ndarray,
    row_start: np.ndarray,
    ed_int: np.ndarray,
    ed_float: np.ndarray,
) -> None:
    """Every (state, dice, roll, move) edge of states ``lo`` to ``hi - 1`` from ``row_start[i]``
    on, in the graph's order (dice, then roll, then largest mask first; a roll with no move has
    one pass row): ``ed_int = (state, dice, roll, mask or -1, next state or -1, sign)``,
    ``ed_float = (probability, reward)``."""
    width = count.shape[1]
    for i in range(lo, hi):
        s = ids[i]
        pattern = dice_pattern(s, rule)
        row = row_start[i]
        for c in range(2):
            if not pattern & (ONE if c == 0 else USUAL):
                continue
            for r in range(width):
                if count[c, r] == 0:
                    continue
                prob = count[c, r] / denom[c]
                first = row
                for k in range(sub_start[r], sub_start[r + 1]):
                    m = sub_masks[k]
                    if s & m == m:
                        _edge(ed_int, ed_float, row, s, dice[c], r, m, s ^ m, 1, prob, 0.0)
                        row += 1
                if row == first:
                    _edge(ed_int, ed_float, row, s, dice[c], r, -1, -1, 0, prob,
                          stuck_value(s, rule))  # fmt: skip
                    row += 1


@kernel
def _edge(
    ed_int: np.ndarray,
    ed_float: np.ndarray,
    row: int,
    s: int,
    dice: int,
    r: int,
    m: int,
    nxt: int,
    sign: int,
    prob: float,
    reward: float,
) -> None:
    ed_int[row, 0] = s
    ed_int[row, 1] = dice
    ed_int[row, 2] = r
    ed_int[row, 3] = m
    ed_int[row, 4] = nxt
    ed_int[row, 5] = sign
    ed_float[row, 0] = prob
    ed_float[row, 1] = reward


def state_numbers(ids: np.ndarray, rule: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Open sum and final score of each state."""
    open_sum = np.empty(ids.shape[0], dtype=np.int32)
    score = np.empty(ids.shape[0], dtype=np.int64)
    _state_numbers(ids, rule, open_sum, score)
    return open_sum, score


@threads.on_blocks
@kernel
def _state_numbers(
    lo: int, hi: int, ids: np.ndarray, rule: np.ndarray, open_sum: np.ndarray, score: np.ndarray
) -> None:
    for i in range(lo, hi):
        open_sum[i] = _open_sum(ids[i], rule[R_TILES])
        score[i] = final_score(ids[i], rule)
