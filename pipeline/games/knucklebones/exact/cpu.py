"""Exact Knucklebones values by value iteration without a move graph (issue 17).

The graph solver (:mod:`pipeline.solve.value_iteration`) stores every move of every position:
for the 3x2 board that is 77 million moves and 6.8 GB. Here successors are generated on the fly
by numba kernels from the canonical state id, exactly as :class:`~pipeline.games.knucklebones.game.
Knucklebones` numbers them: a state id is the colex rank of the sorted multiset of facing-pair
indices of :class:`~pipeline.games.knucklebones.game.PairTables`, so ids, values and moves equal the
graph's state by state. Memory is two numbers per position plus a 4-byte sweep order.

Two-sided bounds (the stopping rule). The Bellman operator ``T`` of this negamax game,
``(TV)(s) = mean over faces of max over moves (offset - V(next))``, is *antitone*: ``V <= W``
gives ``TV >= TW``. So if ``L <= V* <= U`` then ``T(U) <= V* <= T(L)``: every update
``L(s) <- T(U)(s)``, ``U(s) <- T(L)(s)`` keeps both bounds valid, also in place (Gauss-Seidel).
Play ends with probability one under any policies (each turn adds a die to the mover's board and
only the other player removes dice), so the iterates converge and ``U - L -> 0``. Bounds start
at the objective's extremes (0 and 1 for wins; -/+ the largest board score for score) and
terminal positions hold their final value exactly. The solver stops when ``max(U - L) <= 2 tol``
and returns the midpoint: every value is then within ``tol`` of the exact one (up to float64
rounding, ~1e-15; with ``dtype=float32`` bounds are stored rounded to nearest, so use
``tol >= 1e-6``). Unlike "stop when a sweep changes nothing by more than tol", this is a proof.

Sweep order. A placement adds a die, so most successors hold one die more. Each sweep visits the
live positions by total dice, most first, ids ascending within a dice count (the graph solver's
increasing rank order): successors without a removal are then already updated in this sweep.
Updates are in place (Gauss-Seidel). Parallel by blocks: each dice count is cut into
``BLOCKS_PER_THREAD`` contiguous blocks per numba thread, run with ``prange``. A block may read a
value another block is writing at that moment; it then reads the old or the new bound, and both
are valid bounds, so the stopping rule stays a proof -- but with several threads the last bits
depend on timing. With one thread (``threads=1``) the blocks run in order: plain serial
Gauss-Seidel, bitwise reproducible. (Jacobi within a dice count, the deterministic parallel
alternative, took 34 sweeps instead of 20 on 2x2.) Positions are split into *shards* by id
range; shards are Jacobi against each other (a shard reads the other shards' values of the
previous sweep), Gauss-Seidel inside. One shard (the default) is the plain order above;
:mod:`pipeline.games.knucklebones.exact.distributed` runs the shards as Dask tasks and, with the
same shards, gives bitwise the values of :func:`solve` ``(shards=n, threads=1)``.

Memory: 16 bytes per position (8 with float32) plus, per live position, its 4-byte offset in
the sweep order and its sorted pairs (2 bytes each): no move is stored. Positions whose two
bounds have met hold their exact value for good and are skipped (most of them, after the first
sweep). Successor ids are computed for a batch of ``BATCH`` states before their values are
read, so the random reads overlap.

The compact phase (one shard, the default of :func:`solve`). After the first sweep about half of
the live positions are exact (3x2: 4.2 of 9.4 million stay open), and the open ones are the
only ones any later sweep updates. They become a small problem of their own
(:class:`Compact`): their bounds in sweep order (16 bytes each), and per open position the
compact index of each move's successor that is still open (int32, ``faces * columns`` of them)
and, per face, the best move value among its successors that are already exact (``floor``, a
float64: exact values never change again, so that part of the max is computed once). A compact
sweep visits the same positions in the same order (dice count, most first; ids ascending) with
the same update, ``L <- T(U)``, ``U <- T(L)``, reading ``max(floor, max over open successors)``:
a max is exact in floating point, so a face's bound is bit for bit the one the full sweep
computes from the same successor values, and the stopping rule, the skipping of met bounds and
the error bound are unchanged. What changes is the work: no unranking, sorting or ranking per
sweep, and reads from an array of the open positions only (3x2: 67 MB instead of 345 MB). It
costs ``4 * faces * columns + 8 * faces + 20`` bytes per open position (3x2: 520 MB), freed
with the full sweep's order and pairs. With one thread the compact sweeps are plain serial
Gauss-Seidel and bitwise reproducible; the full sweeps read the successors of a ``BATCH`` before
updating it, so the two schedules give values that differ in the last bits (both within
``tol`` of the exact ones). ``compact=False`` keeps the full sweeps (the benchmark's baseline);
shards > 1 (the Dask schedule) always use them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numba
import numpy as np
from numba import njit, prange
from numba.typed import List as NumbaList

from pipeline.errors import UsageError
from pipeline.games.knucklebones.exact.solution import Solution, midpoint
from pipeline.games.knucklebones.game import KnuckleRules
from pipeline.games.knucklebones.rules import (
    Tables,
    combine,
    dice,
    ended,
    final_value,
    successors,
    tables,
    unrank,
)
from pipeline.solve.ties import best_of, pick

#: Default bound on |value - exact value| (the stopping rule: max(U - L) <= 2 * tol).
DEFAULT_TOLERANCE = 1e-11
DEFAULT_MAX_SWEEPS = 10_000
#: Parallel blocks per thread in a level (more blocks balance the uneven successor counts).
BLOCKS_PER_THREAD = 8
#: States whose successor values are read together (overlapping the cache misses).
BATCH = 16


def shard_bounds(n_states: int, shards: int) -> np.ndarray:
    """Start ids of ``shards`` nearly equal id ranges, and ``n_states`` last (int64)."""
    if not 1 <= shards <= n_states:
        raise UsageError(f"shards must be between 1 and {n_states:,}, not {shards}")
    return np.array([i * n_states // shards for i in range(shards + 1)], dtype=np.int64)


# -- kernels: positions (the rules of a move are in rules.py) ------------------------------


@njit(cache=True, parallel=True)
def _init_shard(lo, hi, tb, out, level, blocks):
    """Bounds of ids lo..hi-1 into ``out`` (terminal: exact; live: low, high) and each state's
    total dice into ``level`` (-1 for terminal positions), in ``blocks`` parallel blocks."""
    n, c = hi - lo, tb.columns
    nb = min(n, blocks)
    for b in prange(nb):
        p = np.empty(c, dtype=np.int64)
        for i in range(b * n // nb, (b + 1) * n // nb):
            unrank(lo + i, c, tb.n_pairs, tb.binom, p)
            mine, theirs = dice(p, c, tb.mover_size, tb.opp_size)
            if mine == tb.slots or theirs == tb.slots:
                out[i, 0] = out[i, 1] = final_value(p, c, tb.mover_score, tb.opp_score, tb.wins)
                level[i] = -1
            else:
                out[i, 0], out[i, 1] = tb.low, tb.high
                level[i] = mine + theirs


@njit(cache=True)
def _order_by_level(level, top):
    """Offsets of the live states, most dice first (ids ascending within a level), and the
    start of each level's run: a counting sort (levels are 0..top, -1 is left out)."""
    count = np.zeros(top + 2, dtype=np.int64)
    for x in level:
        if x >= 0:
            count[top - x + 1] += 1
    starts = np.cumsum(count)
    fill = starts[:-1].copy()
    order = np.empty(starts[-1], dtype=np.int32)
    for i in range(level.shape[0]):
        x = level[i]
        if x >= 0:
            order[fill[top - x]] = i
            fill[top - x] += 1
    return order, starts


# -- kernels: the sweep ---------------------------------------------------------------------


@njit(cache=True)
def _lookup(r, lo, hi, local, others, starts):
    """Bounds of state ``r``: this shard's current values, else the other shard's previous."""
    if lo <= r < hi:
        return local[r - lo, 0], local[r - lo, 1]
    k = np.searchsorted(starts, r, side="right") - 1
    a = others[k]
    return a[r - starts[k], 0], a[r - starts[k], 1]


@njit(cache=True)
def _sweep_run(act, n_act, lo, hi, local, others, starts, order, pairs, tb, sw, q, ids, lows,
               highs):  # fmt: skip
    """Update the states order[act[:n_act]] in place; returns (largest change, largest gap).

    All successor ids of the batch first, then all their values: the value reads (random, in
    an array far larger than the caches) are then independent loads the CPU overlaps, instead
    of one cache miss after another."""
    c, f = tb.columns, tb.faces
    for t in range(n_act):
        successors(pairs, act[t], c, f, tb.moved, tb.swap, tb.binom, sw, q, ids, t)
    for t in range(n_act):
        for m in range(f * c):
            if ids[t, m] >= 0:
                lows[t, m], highs[t, m] = _lookup(ids[t, m], lo, hi, local, others, starts)
    ch, gp = 0.0, 0.0
    for t in range(n_act):
        k = order[act[t]]
        new_lo, new_hi = combine(ids, lows, highs, t, c, f, tb.offset)
        ch = max(ch, abs(new_lo - local[k, 0]), abs(new_hi - local[k, 1]))
        local[k, 0], local[k, 1] = new_lo, new_hi
        gp = max(gp, new_hi - new_lo)
    return ch, gp


@njit(cache=True, parallel=True)
def _sweep_level(a, b, lo, hi, local, others, starts, order, pairs, tb, change, gap):
    """Gauss-Seidel update, in place, of the states order[a:b] (one dice count), in
    ``change.shape[0]`` blocks run in parallel (a proof whatever they read of each other, see
    the module docstring), each in batches of BATCH states; each block's largest change and
    largest U - L go to change[blk], gap[blk].

    States whose bounds have met (L == U) are skipped: they hold the exact value, and no later
    update can move it (L only rises and U only falls, both around it). On 2x2 that is 68 % of
    the live states after the first sweep."""
    n, c, f = b - a, tb.columns, tb.faces
    nb = min(n, change.shape[0])
    for blk in prange(nb):
        sw = np.empty(c, dtype=np.int64)
        q = np.empty(c, dtype=np.int64)
        act = np.empty(BATCH, dtype=np.int64)
        ids = np.empty((BATCH, f * c), dtype=np.int64)
        lows = np.empty((BATCH, f * c), dtype=np.float64)
        highs = np.empty((BATCH, f * c), dtype=np.float64)
        ch, gp = 0.0, 0.0
        n_act = 0
        end = a + (blk + 1) * n // nb
        for i in range(a + blk * n // nb, end):
            k = order[i]
            if local[k, 0] != local[k, 1]:
                act[n_act] = i
                n_act += 1
            if n_act == BATCH or (i == end - 1 and n_act > 0):
                c1, g1 = _sweep_run(act, n_act, lo, hi, local, others, starts, order, pairs, tb,
                                    sw, q, ids, lows, highs)  # fmt: skip
                ch, gp = max(ch, c1), max(gp, g1)
                n_act = 0
        change[blk], gap[blk] = ch, gp
    return nb


# -- kernels: the compact phase -------------------------------------------------------------


@njit(cache=True, parallel=True)
def _compact_map(order, values, nb, cmap):
    """Compact index of each live state still open (L != U), in sweep order, into
    cmap[order[i]] (-1 for the others); returns the count. Parallel by ``nb`` blocks: each
    block counts its open states, then numbers them from its prefix."""
    n = order.shape[0]
    counts = np.zeros(nb + 1, dtype=np.int64)
    for blk in prange(nb):
        k = 0
        for i in range(blk * n // nb, (blk + 1) * n // nb):
            k += values[order[i], 0] != values[order[i], 1]
        counts[blk + 1] = k
    first = np.cumsum(counts)
    for blk in prange(nb):
        k = first[blk]
        for i in range(blk * n // nb, (blk + 1) * n // nb):
            s = order[i]
            if values[s, 0] != values[s, 1]:
                cmap[s] = k
                k += 1
            else:
                cmap[s] = -1
    return first[nb]


@njit(cache=True, parallel=True)
def _compact_moves(lo, order, pairs, values, cmap, tb, nb, src, succ, floor):
    """For each open state (compact index t, at sweep position i): src[t] = order[i], and per
    face the compact index of each successor still open (succ[t, v * c + j], -1: none) and
    ``floor[t, v]``, the best move value among the successors already exact (-inf: none).
    Exact successors never change again, so their part of the max is computed once here."""
    n, c, f = order.shape[0], tb.columns, tb.faces
    for blk in prange(nb):
        sw = np.empty(c, dtype=np.int64)
        q = np.empty(c, dtype=np.int64)
        ids = np.empty((1, f * c), dtype=np.int64)
        for i in range(blk * n // nb, (blk + 1) * n // nb):
            k = order[i]
            t = cmap[k]
            if t < 0:
                continue
            src[t] = k
            successors(pairs, i, c, f, tb.moved, tb.swap, tb.binom, sw, q, ids, 0)
            for v in range(f):
                best = -np.inf
                for m in range(v * c, v * c + c):
                    r = ids[0, m]
                    succ[t, m] = -1
                    if r < 0:
                        continue
                    x = cmap[r - lo]
                    if x >= 0:
                        succ[t, m] = x
                    else:  # exact: lower == upper
                        best = max(best, tb.offset - values[r - lo, 0])
                floor[t, v] = best


@njit(cache=True, parallel=True)
def _compact_sweep(a, b, cv, succ, floor, c, f, offset, change, gap):
    """Gauss-Seidel update, in place, of the open states a..b-1 (one dice count) in compact
    form: a face's lower bound is the max of its floor and of offset - U(next) over the open
    successors (the upper bound: offset - L(next)). Same order, blocks and skipping as
    :func:`_sweep_level`; the values are read directly (the compact array is small enough for
    the caches to serve most of them)."""
    n = b - a
    nb = min(n, change.shape[0])
    for blk in prange(nb):
        ch, gp = 0.0, 0.0
        for t in range(a + blk * n // nb, a + (blk + 1) * n // nb):
            if cv[t, 0] == cv[t, 1]:
                continue
            tot_lo, tot_hi = 0.0, 0.0
            for v in range(f):
                best_lo = floor[t, v]
                best_hi = best_lo
                for m in range(v * c, v * c + c):
                    x = succ[t, m]
                    if x >= 0:
                        best_lo = max(best_lo, offset - cv[x, 1])
                        best_hi = max(best_hi, offset - cv[x, 0])
                tot_lo += best_lo
                tot_hi += best_hi
            new_lo, new_hi = tot_lo / f, tot_hi / f
            ch = max(ch, abs(new_lo - cv[t, 0]), abs(new_hi - cv[t, 1]))
            cv[t, 0], cv[t, 1] = new_lo, new_hi
            gp = max(gp, new_hi - new_lo)
        change[blk], gap[blk] = ch, gp
    return nb


@njit(cache=True, parallel=True, nogil=True)
def _pairs_of(lo, ids, c, n_pairs, binom, nb, out):
    """The sorted pairs of each state lo + ids[i] into out[i], in ``nb`` parallel blocks."""
    n = ids.shape[0]
    for blk in prange(nb):
        p = np.empty(c, dtype=np.int64)
        for i in range(blk * n // nb, (blk + 1) * n // nb):
            unrank(lo + ids[i], c, n_pairs, binom, p)
            for k in range(c):
                out[i, k] = p[k]


# -- kernels: the policy --------------------------------------------------------------------


@njit(cache=True)
def _best_move(ids, v, c, value, offset, vals, cols):
    """(best label, next id, node value, tied moves, moves) of face ``v + 1`` given the
    successor ids: the shared tie rule's pick (:mod:`pipeline.solve.tolerance`, the largest
    label), as in every solver. ``vals``: room for the ``c`` values; ``cols``: ``0..c-1``."""
    n_moves = 0
    for j in range(c):
        r = ids[v * c + j]
        vals[j] = offset - value[r] if r >= 0 else np.nan
        n_moves += r >= 0
    best = best_of(vals, 0, c, True)
    label, tied = pick(vals, cols, 0, c, best)
    return label, ids[v * c + label] if label >= 0 else -1, best, tied, n_moves


@njit(cache=True, parallel=True, nogil=True)
def _policy_block(a, b, value, tb):
    """Policy rows of the live states among ids a..b-1 (state, then face: the graph's nodes),
    and each row's successor ids by column label (-1: no such move)."""
    n, c, f = b - a, tb.columns, tb.faces
    live = np.zeros(n + 1, dtype=np.int64)
    for i in prange(n):
        p = np.empty(c, dtype=np.int64)
        unrank(a + i, c, tb.n_pairs, tb.binom, p)
        live[i + 1] = not ended(p, c, tb.slots, tb.mover_size, tb.opp_size)
    row = np.cumsum(live)
    m = row[-1] * f
    state = np.empty(m, dtype=np.int64)
    roll = np.empty(m, dtype=np.int8)
    label = np.empty(m, dtype=np.int8)
    nxt = np.empty(m, dtype=np.int64)
    val = np.empty(m, dtype=np.float64)
    tied = np.empty(m, dtype=np.int16)
    moves = np.empty(m, dtype=np.int16)
    succ = np.empty((m, c), dtype=np.int64)
    for i in prange(n):
        if live[i + 1]:
            p = np.empty((1, c), dtype=np.int64)
            sw = np.empty(c, dtype=np.int64)
            q = np.empty(c, dtype=np.int64)
            ids = np.empty((1, f * c), dtype=np.int64)
            vals = np.empty(c)
            cols = np.arange(c)
            unrank(a + i, c, tb.n_pairs, tb.binom, p[0])
            successors(p, 0, c, f, tb.moved, tb.swap, tb.binom, sw, q, ids, 0)
            for v in range(f):
                k = row[i] * f + v
                state[k], roll[k] = a + i, v + 1
                label[k], nxt[k], val[k], tied[k], moves[k] = _best_move(
                    ids[0], v, c, value, tb.offset, vals, cols
                )
                for j in range(c):
                    succ[k, j] = ids[0, v * c + j]
    return state, roll, label, nxt, val, tied, moves, succ


# -- driver ---------------------------------------------------------------------------------


@dataclass
class Shard:
    """One id range's values ([n, 2]: lower, upper bound) and its sweep order."""

    lo: int
    hi: int
    values: np.ndarray
    order: np.ndarray  # offsets of the live states, most dice first
    level_starts: np.ndarray  # order[level_starts[g]:level_starts[g + 1]] is one dice count
    pairs: np.ndarray  # [live, columns]: the sorted pairs of state lo + order[i]


def _blocks() -> int:
    """Parallel blocks per level: a few per thread, to balance uneven successor counts."""
    return numba.get_num_threads() * BLOCKS_PER_THREAD


def _parts(n: int) -> int:
    """Parallel blocks of a loop over ``n`` states (at least one)."""
    return max(1, min(n, _blocks()))


def init_shard(tb: Tables, lo: int, hi: int, dtype: type = np.float64) -> Shard:
    """The starting bounds of ids ``lo..hi-1`` and their sweep order."""
    if hi - lo >= 2**31:
        raise UsageError("a shard holds at most 2**31 - 1 positions: use more shards")
    values: np.ndarray = np.empty((hi - lo, 2), dtype=dtype)
    level = np.empty(hi - lo, dtype=np.int8)
    _init_shard(lo, hi, tb, values, level, _blocks())
    order, level_starts = _order_by_level(level, 2 * tb.slots)
    del level
    pairs = np.empty((order.shape[0], tb.columns), np.int16 if tb.n_pairs < 2**15 else np.int32)
    # unranked once, not per sweep
    _pairs_of(lo, order, tb.columns, tb.n_pairs, tb.binom, _parts(order.shape[0]), pairs)
    return Shard(lo, hi, values, order, level_starts, pairs)


def sweep_shard(
    tb: Tables, shard: Shard, others: list[np.ndarray], starts: np.ndarray
) -> tuple[float, float]:
    """One sweep of ``shard`` in place, reading other shards' (previous) values from
    ``others`` (id range starts[k]..starts[k + 1]); returns (largest change, largest U - L)."""
    return _by_level(
        shard.level_starts, _sweep_level, shard.lo, shard.hi, shard.values, NumbaList(others),
        starts, shard.order, shard.pairs, tb,
    )  # fmt: skip


def _by_level(level_starts: np.ndarray, kernel: Any, *args: Any) -> tuple[float, float]:
    """A sweep by dice count: ``kernel(a, b, *args, change, gap)`` updates the run a..b-1 of
    the sweep order in parallel blocks (it returns how many, each block's largest change and
    U - L in ``change`` and ``gap``); returns (largest change, largest U - L) over every run."""
    change, gap = np.zeros(_blocks()), np.zeros(_blocks())
    residual, width = 0.0, 0.0
    for a, b in pairwise(level_starts.tolist()):
        if a == b:
            continue
        nb = kernel(a, b, *args, change, gap)
        residual = max(residual, float(change[:nb].max()))
        width = max(width, float(gap[:nb].max()))
    return residual, width


Progress = Callable[[int, float, float, float], None]
"""progress(sweep, residual, bound, positions per second) after each sweep."""


def check_tolerance(tol: float, max_sweeps: int) -> None:
    """UsageError unless the stopping rule can be met."""
    if not tol > 0:
        raise UsageError(f"tolerance must be positive, not {tol}")
    if max_sweeps < 1:
        raise UsageError(f"max sweeps must be at least 1, not {max_sweeps}")


def iterate(
    sweep: Callable[[int], tuple[float, float]],
    n: int,
    tol: float,
    max_sweeps: int,
    progress: Progress | None,
    start: tuple[int, float, float] = (0, np.inf, np.inf),
    stop: bool = False,
    deadline: float | None = None,
) -> tuple[int, float, float, float]:
    """Every exact solver's loop: ``sweep(k)`` (sweep ``k`` over ``n`` ids: largest change and
    U - L) from ``start`` (a checkpoint's sweep, change and U - L) until U - L <= 2 ``tol``;
    (sweeps, change, U - L, seconds of sweeps). After ``max_sweeps`` UsageError, or with
    ``stop`` a stop there or past ``deadline`` (a ``perf_counter`` time), bounds still valid."""
    sweeps, residual, width = start
    swept = 0.0
    while width > 2 * tol:
        if stop and (
            sweeps >= max_sweeps or (deadline is not None and time.perf_counter() > deadline)
        ):
            break
        if sweeps >= max_sweeps:
            raise UsageError(f"value iteration did not reach {tol:g} in {max_sweeps} sweeps")
        t1 = time.perf_counter()
        residual, width = sweep(sweeps + 1)
        sweeps += 1
        dt = time.perf_counter() - t1
        swept += dt
        if progress is not None:
            progress(sweeps, residual, width / 2, n / max(dt, 1e-9))
    return sweeps, residual, width, swept


def solve(
    rules: KnuckleRules,
    tol: float = DEFAULT_TOLERANCE,
    max_sweeps: int = DEFAULT_MAX_SWEEPS,
    shards: int = 1,
    dtype: type = np.float64,
    progress: Progress | None = None,
    threads: int | None = None,
    compact: bool = True,
) -> Solution:
    """Solve a Knucklebones board in one process (every core via numba, or ``threads``).

    Sweeps until every value is within ``tol`` of the exact one (see the module docstring);
    ``shards`` > 1 runs the distributed schedule (Jacobi between id ranges) in this process,
    and with ``threads=1`` it gives bitwise the values of
    :func:`pipeline.games.knucklebones.exact.distributed.solve_distributed` with as many shards.
    With one shard and ``compact`` (the default) the sweeps after the first run on the states
    still open (:class:`Compact`); ``compact=False`` keeps the full sweeps (the baseline of
    ``benchmarks/bench_knucklebones_vi.py``). Raises UsageError if ``max_sweeps`` pass first.
    """
    check_tolerance(tol, max_sweeps)
    before = numba.get_num_threads()
    # numba.config sets its attributes at run time, so a type checker cannot see them
    numba.set_num_threads(threads or numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
    try:
        t0 = time.perf_counter()
        tb = tables(rules)
        starts = shard_bounds(tb.n_states, shards)
        parts = [init_shard(tb, int(a), int(b), dtype) for a, b in pairwise(starts)]
        small: Compact | None = None

        def sweep(_: int) -> tuple[float, float]:
            nonlocal small
            if small is not None:
                return small.sweep(tb)
            previous = [s.values for s in parts]
            if shards > 1:  # Jacobi between shards: each reads the others' values first
                for s in parts:
                    s.values = s.values.copy()
            found = [sweep_shard(tb, s, previous, starts) for s in parts]
            residual, width = max(r for r, _ in found), max(w for _, w in found)
            if compact and shards == 1 and width > 2 * tol:
                small = Compact.of(tb, parts[0])
                # the compact problem holds its own moves: the sweep order and pairs can go
                parts[0].order, parts[0].pairs = parts[0].order[:0], parts[0].pairs[:0]
            return residual, width

        sweeps, residual, width, swept = iterate(sweep, tb.n_states, tol, max_sweeps, progress)
        if small is not None:
            parts[0].values[small.src] = small.values  # the bounds back in the shard's array
        value = np.concatenate([midpoint(s.values) for s in parts])
        return Solution.of(
            rules, value, "cpu", dtype, width / 2, residual, sweeps, time.perf_counter() - t0, swept
        )
    finally:
        numba.set_num_threads(before)


@dataclass
class Compact:
    """The states of one shard still open after a sweep (L != U), as a small problem of their
    own: their bounds in sweep order (``values``), the compact index of each move's open
    successor and, per face, the best value among its exact successors (``floor``)."""

    src: np.ndarray  # offset in the shard of each open state
    values: np.ndarray  # [n, 2] bounds, same dtype as the shard's
    succ: np.ndarray  # [n, faces * columns] int32: compact successor, -1: none or exact
    floor: np.ndarray  # [n, faces] float64: best move value over the exact successors
    level_starts: np.ndarray  # values[level_starts[g]:level_starts[g + 1]]: one dice count

    @classmethod
    def of(cls, tb: Tables, shard: Shard) -> Compact:
        """The open states of ``shard`` (one shard holding every state), after its sweeps."""
        if shard.lo != 0 or shard.hi != tb.n_states:
            raise ValueError("the compact phase needs every state in one shard")
        cmap = np.empty(shard.hi - shard.lo, dtype=np.int32)
        n = int(_compact_map(shard.order, shard.values, _blocks(), cmap))
        src = np.empty(n, dtype=np.int32)
        succ = np.empty((n, tb.faces * tb.columns), dtype=np.int32)
        floor = np.empty((n, tb.faces), dtype=np.float64)
        _compact_moves(
            shard.lo, shard.order, shard.pairs, shard.values, cmap, tb, _blocks(), src, succ, floor
        )
        opened = np.zeros(shard.order.shape[0] + 1, dtype=np.int64)
        np.cumsum(cmap[shard.order] >= 0, out=opened[1:])
        del cmap
        return cls(src, shard.values[src], succ, floor, opened[shard.level_starts])

    def sweep(self, tb: Tables) -> tuple[float, float]:
        """One sweep in place; returns (largest change, largest U - L)."""
        return _by_level(
            self.level_starts, _compact_sweep, self.values, self.succ, self.floor, tb.columns,
            tb.faces, tb.offset,
        )  # fmt: skip


def policy_block(rules: KnuckleRules, value: np.ndarray, a: int, b: int) -> dict[str, np.ndarray]:
    """The best move of every (live state, face) among state ids ``a..b-1``, in the graph's
    node order (state id, then face).

    Keys: ``state_id``, ``roll`` (the face), ``best_move`` (the column label, 0-based: the
    table writes ``[label + 1]``), ``next_state_id``, ``value`` (of the best move), ``n_optimal``
    (moves tied for best), ``n_moves`` and ``successors`` ([rows, columns]: the successor id of
    each column label, -1 where the label is no move). A live state always has a move (its
    board has room), so ``stuck`` is always false. Ties under the shared tie rule
    (:mod:`pipeline.solve.tolerance`) go to the largest label, as in the graph solver.
    """
    tb = tables(rules)
    if value.shape != (tb.n_states,):
        raise UsageError(f"expected {tb.n_states:,} values, got {value.shape}")
    if not 0 <= a <= b <= tb.n_states:
        raise UsageError(f"state ids {a}..{b} are not within 0..{tb.n_states}")
    names = (
        "state_id", "roll", "best_move", "next_state_id", "value", "n_optimal", "n_moves",
        "successors",
    )  # fmt: skip
    return dict(zip(names, _policy_block(a, b, value, tb), strict=True))


def pairs_of(rules: KnuckleRules, ids: np.ndarray) -> np.ndarray:
    """[len(ids), columns] int64: the sorted facing-pair indices of each state id (the rows of
    :attr:`pipeline.games.knucklebones.game.Knucklebones.positions`, without building them all)."""
    tb = tables(rules)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    out = np.empty((ids.shape[0], tb.columns), dtype=np.int64)
    _pairs_of(0, ids, tb.columns, tb.n_pairs, tb.binom, _parts(ids.shape[0]), out)
    return out


@njit(cache=True)
def _successor_ids(ids, tb, out):
    """out[i, v * c + j]: the successor id of move (face v + 1, column j) of state ids[i]
    (-1: no such move; every entry -1 for a finished game)."""
    c = tb.columns
    p = np.empty((1, c), dtype=np.int64)
    sw = np.empty(c, dtype=np.int64)
    q = np.empty(c, dtype=np.int64)
    for i in range(ids.shape[0]):
        unrank(ids[i], c, tb.n_pairs, tb.binom, p[0])
        successors(p, 0, c, tb.faces, tb.moved, tb.swap, tb.binom, sw, q, out, i)


def successor_ids(rules: KnuckleRules, ids: np.ndarray) -> np.ndarray:
    """[len(ids), faces * columns] int64: each state's successor id by (face, column label),
    -1 where there is no such move (a full column, a pair equal to the one before). A finished
    game's rows are meaningless: check :func:`pairs_of` and the dice first."""
    tb = tables(rules)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    out = np.empty((ids.shape[0], tb.faces * tb.columns), dtype=np.int64)
    _successor_ids(ids, tb, out)
    return out
