"""One-player Shut the Box solved layer by layer without a game graph, its tables streamed.

The graph of a big box (every (state, roll, move) row) does not fit in memory: 24 tiles with
three dice have about a billion moves. Here the moves are generated from the rules inside
compiled kernels, and only the value of every state (float64, indexed by state id, 2**tiles of
them) is kept. States are visited in the rank order of :meth:`ShutTheBox.graph` (number of open
tiles, then id): a move only shuts tiles, so a layer reads only lower layers and its states can
be solved in parallel (``prange``). Each layer is cut into chunks of states whose rows are
yielded as numpy column batches (:class:`Batch`) and may be written straight to Parquet
(:mod:`pipeline.stream_writer`), so memory does not grow with the tables.

The results are the graph solve's, bit for bit: a node's value is the best successor value (ties
within 1e-12, relative, go to the largest move label, the mask of the tiles shut); a dice
choice's value sums ``count / denom * node value`` over its rolls in increasing roll order, in
the same association as NumPy's ``add.reduceat`` (first term plus a pairwise sum of the rest),
which :func:`pipeline.solvers.rank_order.backup_states` uses; ties between choices go to the
larger number of dice.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from numba import njit, prange

from pipeline.games.dice import roll_distribution
from pipeline.games.shutbox import RuleSet, ShutTheBox
from pipeline.solvers.rank_order import TIE_TOLERANCE

# OpenMP workers spin while they wait by default: on a busy machine an idle worker then holds
# a core the last worker of a layer needs (a 4,096-state box took 0.57 s instead of 2 ms).
# Waiting workers sleep instead; read when numba starts its threads, at the first kernel.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

#: Policy rows per batch (one Parquet row group each): pyarrow's default row group size.
BATCH_ROWS = 1 << 20

# Slots of the integer rule vector the kernels read (one array keeps their signatures short).
R_TILES, R_MODE, R_SUM, R_NEED, R_OBJECTIVE, R_TARGET, R_SCORING = range(7)
MODES = {"never": 0, "forced": 1, "optional": 2}
OBJECTIVE_CODES = {"shut": 0, "score": 1, "target": 2}
#: Bits of a state's availability pattern: which choices (one die, the usual dice) it may roll.
ONE, USUAL = 1, 2


@dataclass(frozen=True)
class Compiled:
    """A rule set as the flat arrays the kernels read."""

    rules: RuleSet
    rule: np.ndarray
    """int64 [7]: tiles, one-die mode, one-die sum (-1: none), mask of the tiles that must be
    shut for one die, objective code, target (-1: none), scoring (0 sum, 1 digital)."""
    count: np.ndarray
    """int64 [2, width]: ways to roll each total with one die (row 0) and the usual dice (row 1);
    row 0 is all zero when one die is never rolled."""
    denom: np.ndarray
    """int64 [2]: sides ** dice of each row of ``count`` (1 when unused)."""
    dice: np.ndarray
    """int64 [2]: the number of dice of each row: 1 and ``rules.dice``."""
    sub_masks: np.ndarray
    """int64 [K]: every set of tiles a move may shut, grouped by sum, largest mask first."""
    sub_start: np.ndarray
    """int64 [width + 1]: where the masks summing to each total start in ``sub_masks``."""
    maximise: bool

    @property
    def width(self) -> int:
        """One more than the largest roll."""
        return int(self.count.shape[1])


def compile_rules(rules: RuleSet) -> Compiled:
    """The kernels' view of ``rules``: dice distributions and the candidate moves of each roll."""
    game = ShutTheBox(rules)
    width = rules.dice * rules.sides + 1
    count = np.zeros((2, width), dtype=np.int64)
    denom = np.ones(2, dtype=np.int64)
    for row, dice in ((0, 1), (1, rules.dice)):
        if row == 0 and rules.one_die == "never":
            continue
        for total, ways, den in roll_distribution(dice, rules.sides):
            count[row, total] = ways
            denom[row] = den
    by_sum: list[list[int]] = [[] for _ in range(width)]
    for m, total in game.subsets_by_sum(width - 1):
        by_sum[total].append(m)
    # Largest mask first, so the first tie met in a node is the one the graph solve prefers.
    sub_masks = np.array([m for ms in by_sum for m in sorted(ms, reverse=True)], dtype=np.int64)
    sub_start = np.concatenate(([0], np.cumsum([len(ms) for ms in by_sum]))).astype(np.int64)
    need = sum(1 << (t - 1) for t in rules.one_die_shut)
    rule = np.array(
        [
            rules.tiles,
            MODES[rules.one_die],
            -1 if rules.one_die_sum is None else rules.one_die_sum,
            need,
            OBJECTIVE_CODES[rules.objective],
            -1 if rules.target is None else rules.target,
            int(rules.scoring == "digital"),
        ],
        dtype=np.int64,
    )
    return Compiled(
        rules,
        rule,
        count,
        denom,
        np.array([1, rules.dice], dtype=np.int64),
        sub_masks,
        sub_start,
        rules.objective != "score",
    )


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


@njit(cache=True)
def _open_sum(s: int, tiles: int) -> int:
    total = 0
    for i in range(tiles):
        if (s >> i) & 1:
            total += i + 1
    return total


@njit(cache=True)
def _score(s: int, rule: np.ndarray) -> int:
    """Final score when stuck in ``s``: the open sum, or the open tiles read as digits."""
    if rule[R_SCORING] == 0:
        return _open_sum(s, rule[R_TILES])
    score = 0
    for i in range(rule[R_TILES]):
        if (s >> i) & 1:
            score = score * 10 + i + 1
    return score


@njit(cache=True)
def _stuck_value(s: int, rule: np.ndarray) -> float:
    """The objective applied to the final score of ``s`` (as ShutTheBox.stuck_values)."""
    score = _score(s, rule)
    if rule[R_OBJECTIVE] == 0:
        return 1.0 if score == 0 else 0.0
    if rule[R_OBJECTIVE] == 2:
        return 1.0 if score <= rule[R_TARGET] else 0.0
    return float(score)


@njit(cache=True)
def _pattern(s: int, rule: np.ndarray) -> int:
    """Which choices state ``s`` may roll (bits ONE, USUAL), as ShutTheBox.dice_available."""
    if s == 0:
        return 0
    cond = True
    if rule[R_SUM] >= 0:
        cond = _open_sum(s, rule[R_TILES]) <= rule[R_SUM]
    if rule[R_NEED] != 0 and (s & rule[R_NEED]) != 0:
        cond = False
    mode = rule[R_MODE]
    if mode == 0:
        return USUAL
    if mode == 1:
        return ONE if cond else USUAL
    return (ONE | USUAL) if cond else USUAL


@njit(cache=True)
def _layer_ids(tiles: int, k: int, out: np.ndarray) -> None:
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


@njit(cache=True)
def _pairwise_block(a: np.ndarray, lo: int, n: int) -> float:
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


@njit(cache=True)
def _reduceat_sum(a: np.ndarray, n: int) -> float:
    """``np.add.reduceat`` of one run ``a[:n]``: the first term plus a pairwise sum of the rest.

    At most 8 dice of 20 sides give 153 totals, so one split of the pairwise sum suffices.
    """
    m = n - 1
    if m <= 128:
        return a[0] + _pairwise_block(a, 1, m)
    half = m // 2
    half -= half % 8
    return a[0] + (_pairwise_block(a, 1, half) + _pairwise_block(a, 1 + half, m - half))


# -- the layer kernel ------------------------------------------------------------------------


@njit(cache=True)
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


@njit(cache=True)
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
    tol = TIE_TOLERANCE * max(1.0, abs(best))
    pick = -1
    n_opt = 0
    for k in range(lo, sub_start[r + 1]):
        if abs(cand[k - lo] - best) <= tol:
            n_opt += 1
            if pick < 0:  # masks come largest first
                pick = sub_masks[k]
    return best, found, pick, n_opt


@njit(cache=True)
def _choose(
    g_one: float, g_usual: float, dice: np.ndarray, pattern: int, maxi: bool
) -> tuple[float, int]:
    """Best choice value and the chosen number of dice (ties to the larger number)."""
    if pattern == ONE:
        return g_one, dice[0]
    if pattern == USUAL:
        return g_usual, dice[1]
    best = max(g_one, g_usual) if maxi else min(g_one, g_usual)
    if abs(g_usual - best) <= TIE_TOLERANCE * max(1.0, abs(best)):
        return best, dice[1]
    return best, dice[0]


@njit(cache=True, parallel=True, nogil=True)
def solve_chunk(
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
    """Solve the states ``ids`` (one layer or part of one), whose successors are all valued.

    Writes ``value[s]``; per state, ``st_out[i] = (dice chosen, number of choices, legal moves
    over its rolls, edge rows)``. When ``node_start`` (per state, first node row, plus the end)
    is not empty, the (state, roll) nodes of state ``i`` fill rows ``node_start[i]`` on of the
    ``nodes`` columns (see :func:`new_nodes`), in increasing roll.
    """
    n = ids.shape[0]
    width = count.shape[1]
    want_nodes = node_start.shape[0] > 0
    most = int(np.max(np.diff(sub_start)))
    blocks = min(n, 64)  # a few blocks per thread: scratch arrays allocated once per block
    for b in prange(blocks):
        nv = np.empty(width)  # per roll: node value, number of legal moves
        nm = np.zeros(width, dtype=np.int64)
        scratch = np.empty(max(most, width))
        for i in range(b * n // blocks, (b + 1) * n // blocks):
            s = ids[i]
            pattern = _pattern(s, rule)
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


@njit(cache=True)
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
    stuck = _stuck_value(s, rule)
    moves = 0
    for r in range(count.shape[1]):
        if not _rolls(pattern, count, r):
            continue
        if j >= 0:
            best, found, pick, n_opt = _node_ties(s, r, value, sub_masks, sub_start, maxi, scratch)
            _put_node(nodes, j, s, r, best if found else stuck, pick, n_opt, found)
            j += 1
        else:
            best, found = _node(s, r, value, sub_masks, sub_start, maxi)
        nv[r] = best if found else stuck
        nm[r] = found
        moves += found
    return moves


@njit(cache=True)
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
            t = 0
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


@njit(cache=True)
def _rolls(pattern: int, count: np.ndarray, r: int) -> bool:
    """Whether a state with availability ``pattern`` can roll the total ``r``."""
    return ((pattern & ONE) != 0 and count[0, r] > 0) or (
        (pattern & USUAL) != 0 and count[1, r] > 0
    )


@njit(cache=True)
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


@njit(cache=True, parallel=True)
def node_counts(ids: np.ndarray, rule: np.ndarray, per_pattern: np.ndarray) -> np.ndarray:
    """Number of (state, roll) nodes of each state: the rolls its choices can give."""
    out = np.empty(ids.shape[0], dtype=np.int64)
    for i in prange(ids.shape[0]):
        out[i] = per_pattern[_pattern(ids[i], rule)]
    return out


@njit(cache=True)
def layer_sizes(tiles: int) -> np.ndarray:
    """Number of states with k open tiles, k = 0..tiles (binomial coefficients)."""
    out = np.ones(tiles + 1, dtype=np.int64)
    for k in range(1, tiles + 1):
        out[k] = out[k - 1] * (tiles - k + 1) // k
    return out


@njit(cache=True, parallel=True, nogil=True)
def fill_moves(
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
    """Every legal move of the chunk's nodes from ``row_start[i]`` on, largest mask first:
    ``mv_int = (state, roll, mask, next state, is best)``, ``mv_float = (value, regret)``."""
    for i in prange(ids.shape[0]):
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
                    mv_float[row, 1] = max((best - v) if maxi else (v - best), 0.0)
                    row += 1


@njit(cache=True, parallel=True, nogil=True)
def fill_edges(
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
    """Every (state, dice, roll, move) edge from ``row_start[i]`` on, in the graph's order
    (dice, then roll, then largest mask first; a roll with no move has one pass row):
    ``ed_int = (state, dice, roll, mask or -1, next state or -1, sign)``,
    ``ed_float = (probability, reward)``."""
    width = count.shape[1]
    for i in prange(ids.shape[0]):
        s = ids[i]
        pattern = _pattern(s, rule)
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
                          _stuck_value(s, rule))  # fmt: skip
                    row += 1


@njit(cache=True)
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


@njit(cache=True, parallel=True)
def state_numbers(ids: np.ndarray, rule: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Open sum and final score of each state."""
    open_sum = np.empty(ids.shape[0], dtype=np.int32)
    score = np.empty(ids.shape[0], dtype=np.int64)
    for i in prange(ids.shape[0]):
        open_sum[i] = _open_sum(ids[i], rule[R_TILES])
        score[i] = _score(ids[i], rule)
    return open_sum, score


# -- driving the layers ----------------------------------------------------------------------


@dataclass
class Chunk:
    """The raw kernel outputs of one chunk of a layer (see :func:`solve_chunk`)."""

    layer: int
    ids: np.ndarray
    st_out: np.ndarray
    node_start: np.ndarray
    nodes: NodeColumns


@dataclass(frozen=True)
class Batch:
    """The rows of one chunk of a layer, one dict of equal-length numpy columns per table.

    Columns that may be null are ``numpy.ma.MaskedArray`` (masked = null). Rows come in the
    order of today's tables: states by (open tiles, state id); policy by state then roll; moves
    by node then mask, largest first; edges by state, dice, roll, then mask, largest first.
    """

    layer: int
    """Number of open tiles of the chunk's states."""
    states: dict[str, np.ndarray]
    """state_id, n_open, open_sum, score, terminal, rank, value, dice (null when shut),
    choice_options."""
    policy: dict[str, np.ndarray] | None = None
    """One row per (state, roll): state_id, roll, stuck, best_move_mask (tiles shut, as a state
    id; null when stuck), next_state_id (null when stuck), value, n_optimal, n_moves."""
    moves: dict[str, np.ndarray] | None = None
    """One row per legal move: state_id, roll, move_mask, next_state_id, value, regret,
    is_best."""
    edges: dict[str, np.ndarray] | None = None
    """One row per (state, dice, roll, move), a pass row when no move is legal: state_id, dice,
    roll, prob, move_mask (null: pass), next_state_id (null: game over), reward, sign."""


@dataclass
class StreamSolver:
    """Solves one rule set layer by layer; ``value`` holds every state's value (by id)."""

    rules: RuleSet
    c: Compiled = field(init=False)
    value: np.ndarray = field(init=False)
    moves: int = 0
    """Legal (state, roll, move) triples met so far."""
    nodes: int = 0
    """(state, roll) decision nodes met so far (counted when nodes are output)."""

    def __post_init__(self) -> None:
        self.c = compile_rules(self.rules)
        self.value = np.full(1 << self.rules.tiles, np.nan)

    def per_pattern(self) -> np.ndarray:
        """Nodes per state for each availability pattern (index: bits ONE, USUAL)."""
        used = self.c.count > 0
        return np.array(
            [0, used[0].sum(), used[1].sum(), (used[0] | used[1]).sum()], dtype=np.int64
        )

    def rows_per_state(self, regrets: bool, edges: bool) -> int:
        """The most rows one state can add to any table asked for (to size chunks)."""
        cands = np.diff(self.c.sub_start)
        used = self.c.count > 0
        most = int(self.per_pattern().max())
        if regrets:
            most = max(most, int(cands[used[0] | used[1]].sum()))
        if edges:
            most = max(most, int(sum(np.maximum(cands[u], 1).sum() for u in used)))
        return max(most, 1)

    def chunks(self, nodes: bool, states_per_chunk: int | None = None) -> Iterator[Chunk]:
        """Solve every layer, lowest first, yielding its states a chunk at a time.

        With ``nodes`` each chunk also holds its (state, roll) nodes. A chunk has at most
        ``states_per_chunk`` states (default: a whole layer per chunk).
        """
        tiles = self.rules.tiles
        per_pattern = self.per_pattern()
        self.value[0] = _stuck_value(0, self.c.rule)
        for k, size in enumerate(layer_sizes(tiles)):
            ids = np.empty(size, dtype=np.int64)
            _layer_ids(tiles, k, ids)
            step = max(1, states_per_chunk) if states_per_chunk is not None else size
            for lo in range(0, size, step):
                yield self._solve(k, ids[lo : lo + step], nodes, per_pattern)

    def _solve(self, layer: int, ids: np.ndarray, nodes: bool, per_pattern: np.ndarray) -> Chunk:
        """Run the kernel on one chunk of a layer."""
        c = self.c
        st_out = np.zeros((ids.shape[0], 4), dtype=np.int64)
        node_start = np.zeros(0, dtype=np.int64)
        n_nodes = 0
        if nodes:
            counts = node_counts(ids, c.rule, per_pattern)
            node_start = np.zeros(ids.shape[0] + 1, dtype=np.int64)
            np.cumsum(counts, out=node_start[1:])
            n_nodes = int(node_start[-1])
        nd = new_nodes(n_nodes)
        if layer == 0:  # the shut box: terminal, no choice, no roll
            st_out[0, 0] = -1
        else:
            solve_chunk(
                ids, self.value, c.rule, c.count, c.denom, c.dice, c.sub_masks, c.sub_start,
                c.maximise, st_out, node_start, nd,
            )  # fmt: skip
        self.moves += int(st_out[:, 2].sum())
        self.nodes += n_nodes
        return Chunk(layer, ids, st_out, node_start, nd)

    def solve(self) -> np.ndarray:
        """Solve every state (no per-node outputs) and return the values by state id."""
        for _ in self.chunks(nodes=False):
            pass
        return self.value

    def batches(
        self,
        policy: bool = True,
        regrets: bool = False,
        edges: bool = False,
        batch_rows: int = BATCH_ROWS,
    ) -> Iterator[Batch]:
        """Solve every layer and yield its rows as :class:`Batch` es of about ``batch_rows``
        rows per table (the states batch is smaller: one row per state)."""
        step = max(1, batch_rows // self.rows_per_state(regrets, edges))
        for ch in self.chunks(nodes=policy or regrets, states_per_chunk=step):
            yield Batch(
                ch.layer,
                self._state_columns(ch),
                self._policy_columns(ch) if policy else None,
                self._move_columns(ch) if regrets else None,
                self._edge_columns(ch) if edges else None,
            )

    def _state_columns(self, ch: Chunk) -> dict[str, np.ndarray]:
        """The states batch of a chunk."""
        open_sum, score = state_numbers(ch.ids, self.c.rule)
        n = ch.ids.shape[0]
        return {
            "state_id": ch.ids,
            "n_open": np.full(n, ch.layer, dtype=np.int16),
            "open_sum": open_sum,
            "score": score,
            "terminal": np.full(n, ch.layer == 0),
            "rank": np.full(n, ch.layer, dtype=np.int32),
            "value": self.value[ch.ids],
            "dice": np.ma.masked_less(ch.st_out[:, 0].astype(np.int16), 0),
            "choice_options": ch.st_out[:, 1].astype(np.int16),
        }

    def _policy_columns(self, ch: Chunk) -> dict[str, np.ndarray]:
        """The policy batch of a chunk: the best move of every (state, roll)."""
        state, roll, label, nxt, val, n_optimal, n_moves, stuck = ch.nodes
        return {
            "state_id": state,
            "roll": roll,
            "stuck": stuck,
            "best_move_mask": np.ma.array(label, mask=stuck),
            "next_state_id": np.ma.array(nxt, mask=stuck),
            "value": val,
            "n_optimal": n_optimal,
            "n_moves": n_moves,
        }

    def _move_columns(self, ch: Chunk) -> dict[str, np.ndarray]:
        """The moves batch of a chunk: every legal move, its value and regret."""
        c = self.c
        row_start = np.zeros(ch.ids.shape[0] + 1, dtype=np.int64)
        np.cumsum(ch.st_out[:, 2], out=row_start[1:])
        mv_int = np.empty((int(row_start[-1]), 5), dtype=np.int64)
        mv_float = np.empty((int(row_start[-1]), 2))
        _, roll, label, _, val, _, _, _ = ch.nodes
        fill_moves(
            ch.ids, self.value, c.sub_masks, c.sub_start, c.maximise, ch.node_start, roll, label,
            val, row_start, mv_int, mv_float,
        )  # fmt: skip
        return {
            "state_id": mv_int[:, 0].copy(),
            "roll": mv_int[:, 1].astype(np.int16),
            "move_mask": mv_int[:, 2].astype(np.int32),
            "next_state_id": mv_int[:, 3].copy(),
            "value": mv_float[:, 0].copy(),
            "regret": mv_float[:, 1].copy(),
            "is_best": mv_int[:, 4].astype(bool),
        }

    def _edge_columns(self, ch: Chunk) -> dict[str, np.ndarray]:
        """The edges batch of a chunk: every (state, dice, roll, move) with its probability."""
        c = self.c
        row_start = np.zeros(ch.ids.shape[0] + 1, dtype=np.int64)
        np.cumsum(ch.st_out[:, 3], out=row_start[1:])
        ed_int = np.empty((int(row_start[-1]), 6), dtype=np.int64)
        ed_float = np.empty((int(row_start[-1]), 2))
        fill_edges(
            ch.ids, c.rule, c.count, c.denom, c.dice, c.sub_masks, c.sub_start, row_start,
            ed_int, ed_float,
        )  # fmt: skip
        passed = ed_int[:, 3] < 0
        return {
            "state_id": ed_int[:, 0].copy(),
            "dice": ed_int[:, 1].astype(np.int16),
            "roll": ed_int[:, 2].astype(np.int16),
            "prob": ed_float[:, 0].copy(),
            "move_mask": np.ma.array(ed_int[:, 3].astype(np.int32), mask=passed),
            "next_state_id": np.ma.array(ed_int[:, 4], mask=passed),
            "reward": ed_float[:, 1].copy(),
            "sign": ed_int[:, 5].astype(np.int8),
        }


def stream_tables(
    rules: RuleSet,
    policy: bool = True,
    regrets: bool = False,
    edges: bool = False,
    batch_rows: int = BATCH_ROWS,
) -> tuple[StreamSolver, Iterator[Batch]]:
    """A solver for ``rules`` and the iterator of its batches (see :meth:`StreamSolver.batches`).

    The solve runs as the batches are consumed; once they are, ``solver.value`` holds every
    state's value by id (e.g. ``solver.value[(1 << tiles) - 1]`` at the start).
    """
    solver = StreamSolver(rules)
    return solver, solver.batches(policy, regrets, edges, batch_rows)


#: Columns that may hold nulls; the others are declared non-null, which spares the writer
#: their definition levels (a third of the policy table's encoding time).
NULLABLE = {"dice", "best_move_mask", "move_mask", "next_state_id"}
#: Policy columns a reader can derive: stuck = best_move_mask is null, next_state_id =
#: state_id ^ best_move_mask. ``schemas(lean=True)`` leaves them out (the policy of a big box
#: is hundreds of millions of rows, and each column costs write time).
DERIVED_POLICY = ("stuck", "next_state_id")


def schemas(with_variant: bool = True, lean: bool = False) -> dict[str, pa.Schema]:
    """Arrow schemas of the streamed tables, by name (states, policy, moves, edges).

    Column names and types follow today's tables where they share a column; moves are tile
    masks (``*_mask``, int32) rather than lists of tiles. With ``with_variant``, each starts with
    a ``variant`` column (a constant for :func:`pipeline.stream_writer.write_streamed`), and
    states end with the constants ``objective``, ``maximise`` and ``residual`` (0.0). With
    ``lean`` the policy leaves out :data:`DERIVED_POLICY`.
    """
    i16, i32, i64, f64 = pa.int16(), pa.int32(), pa.int64(), pa.float64()
    fields = {
        "states": [
            ("state_id", i64), ("n_open", i16), ("open_sum", i32), ("score", i64),
            ("terminal", pa.bool_()), ("rank", i32), ("value", f64), ("dice", i16),
            ("choice_options", i16), ("objective", pa.string()), ("maximise", pa.bool_()),
            ("residual", f64),
        ],
        "policy": [
            ("state_id", i64), ("roll", i16), ("stuck", pa.bool_()), ("best_move_mask", i32),
            ("next_state_id", i64), ("value", f64), ("n_optimal", i16), ("n_moves", i16),
        ],
        "moves": [
            ("state_id", i64), ("roll", i16), ("move_mask", i32), ("next_state_id", i64),
            ("value", f64), ("regret", f64), ("is_best", pa.bool_()),
        ],
        "edges": [
            ("state_id", i64), ("dice", i16), ("roll", i16), ("prob", f64),
            ("move_mask", i32), ("next_state_id", i64), ("reward", f64), ("sign", pa.int8()),
        ],
    }  # fmt: skip
    if lean:
        fields["policy"] = [f for f in fields["policy"] if f[0] not in DERIVED_POLICY]
    head = [("variant", pa.string())] if with_variant else []
    return {
        name: pa.schema([pa.field(n, t, nullable=n in NULLABLE) for n, t in head + cols])
        for name, cols in fields.items()
    }


#: Columns with few distinct values: dictionary-encoded. The others (ids, values) are written
#: plain, since a dictionary of a million distinct ids per row group costs time and saves nothing.
LOW_CARDINALITY = {
    "states": ["variant", "n_open", "dice", "choice_options", "objective", "maximise",
               "terminal", "rank", "residual"],
    "policy": ["variant", "roll", "stuck", "best_move_mask", "n_optimal", "n_moves"],
    "moves": ["variant", "roll", "move_mask", "is_best"],
    "edges": ["variant", "dice", "roll", "prob", "move_mask", "sign"],
}  # fmt: skip


def parquet_options() -> dict[str, dict[str, object]]:
    """ParquetWriter options for each streamed table: zstd, dictionaries where they pay, and
    min/max statistics only on what readers filter by (state_id, roll), for row-group pruning."""
    return {
        name: {
            "compression": "zstd",
            "use_dictionary": cols,
            "write_statistics": ["state_id", "roll", "n_open"],
        }
        for name, cols in LOW_CARDINALITY.items()
    }


def state_constants(rules: RuleSet, variant: str) -> dict[str, object]:
    """The constant columns of a variant's states rows (see :func:`schemas`)."""
    return {
        "variant": variant,
        "objective": rules.objective,
        "maximise": rules.objective != "score",
        "residual": 0.0,
    }
