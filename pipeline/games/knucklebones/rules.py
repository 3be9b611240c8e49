"""The rule book of Knucklebones on canonical positions, written once for every engine.

These are the scalar kernels of the exact solvers (CPU, Dask, GPU), the search and the players:
unranking a state id into its sorted facing pairs, a move (:func:`move_pair`, :func:`turned_after`)
and the successor id of every (face, column) move, the dice on each board (:func:`dice`,
:func:`ended`), the score difference (:func:`score_diff`) and the value of a finished game, and the
greedy player's gain (:func:`gain`), reading the arrays of
:class:`Tables` (made here by :func:`tables`). They are plain ``numba.njit`` functions
that use nothing but scalar arithmetic, loops and caller-provided arrays (no allocation, no NumPy
calls), so the same definitions are compiled by numba for the CPU
(:mod:`pipeline.games.knucklebones.exact.cpu`, :mod:`pipeline.games.knucklebones.players.search`,
:mod:`~.players.engine`) and, called from a ``numba.cuda.jit`` kernel, as device functions for the
GPU (:mod:`pipeline.games.knucklebones.exact.gpu`): numba-cuda compiles an ``njit`` function called
from a kernel for the CUDA target. There is one copy of the rules, so the backends cannot drift
apart; the tests compare them state by state, and with
:meth:`pipeline.games.knucklebones.game.Knucklebones.play`, the same move on boards in play.

Arrays are passed as arrays and row indices rather than row views: on the CPU a view costs an
atomic reference count that threads fight over, and on the GPU the scratch arrays are the
kernel's local arrays.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np
from numba import njit

from pipeline.games.knucklebones.game import KnuckleRules, PairTables, binomials, n_positions
from pipeline.solve import compiled  # noqa: F401 -- numba looks in the shipped kernels first

#: A full column's gain (:func:`gain`): below any real one.
NO_GAIN = -(2**62)


class Tables(NamedTuple):
    """Everything the kernels need about one board and die, as flat int64 arrays: one kernel
    argument, always of the same types (also the search's and the players' ``board``)."""

    columns: int
    faces: int
    slots: int
    n_pairs: int
    n_states: int
    moved: np.ndarray  # [pair, face]: the pair after placing face + 1, swapped (-1: full)
    swap: np.ndarray  # pair seen from the other side
    binom: np.ndarray  # binom[i, j] = C(i, j), for the colex rank
    mover_size: np.ndarray
    opp_size: np.ndarray
    mover_score: np.ndarray
    opp_score: np.ndarray
    offset: float  # a move's value is offset - V(next): 1 (wins) or 0 (score)
    wins: bool
    low: float  # a priori bounds of every value
    high: float


@lru_cache(maxsize=8)
def tables(rules: KnuckleRules) -> Tables:
    """The kernel tables of ``rules`` (cached: Dask tasks of one worker share them)."""
    t = PairTables(rules.rows, rules.faces)
    c = rules.columns
    wins = rules.objective == "wins"
    most = float(c * rules.faces * rules.rows**2)  # the largest board score
    return Tables(
        columns=c,
        faces=rules.faces,
        slots=rules.slots,
        n_pairs=t.n_pairs,
        n_states=n_positions(t.n_pairs, c),
        moved=t.moved.astype(np.int64),
        swap=np.ascontiguousarray(t.swap, dtype=np.int64),
        binom=binomials(t.n_pairs + c, c),
        mover_size=t.mover_size.astype(np.int64),
        opp_size=t.opp_size.astype(np.int64),
        mover_score=t.mover_score.astype(np.int64),
        opp_score=t.opp_score.astype(np.int64),
        offset=1.0 if wins else 0.0,
        wins=wins,
        low=0.0 if wins else -most,
        high=1.0 if wins else most,
    )


@njit(cache=True)
def unrank(r, c, n_pairs, binom, out):
    """The sorted pair indices of colex rank ``r`` (inverse of rank_multisets), into ``out``."""
    hi = n_pairs - 1
    for i in range(c - 1, -1, -1):
        a, b = 0, hi
        while a < b:  # the largest x <= hi with C(x + i, i + 1) <= r
            m = (a + b + 1) // 2
            if binom[m + i, i + 1] <= r:
                a = m
            else:
                b = m - 1
        out[i] = a
        r -= binom[a + i, i + 1]
        hi = a


@njit(cache=True)
def sort_small(q, c):
    """Sort q[:c] (c <= 4) by a min/max network: no data-dependent branches to mispredict."""
    if c == 2:
        q[0], q[1] = min(q[0], q[1]), max(q[0], q[1])
    elif c == 3:
        q[0], q[1] = min(q[0], q[1]), max(q[0], q[1])
        q[1], q[2] = min(q[1], q[2]), max(q[1], q[2])
        q[0], q[1] = min(q[0], q[1]), max(q[0], q[1])
    elif c == 4:
        q[0], q[1] = min(q[0], q[1]), max(q[0], q[1])
        q[2], q[3] = min(q[2], q[3]), max(q[2], q[3])
        q[0], q[2] = min(q[0], q[2]), max(q[0], q[2])
        q[1], q[3] = min(q[1], q[3]), max(q[1], q[3])
        q[1], q[2] = min(q[1], q[2]), max(q[1], q[2])


@njit(cache=True)
def move_pair(here, before, j, v, moved):
    """The pair that column ``j`` of a sorted position becomes when it takes face ``v + 1``,
    seen by the opponent (``moved[pair, v]``); -1 when there is no such move: the column is
    full, or it holds the same pair as column ``j - 1`` (``before``, unread for ``j = 0``), so
    that the move is that column's."""
    if j > 0 and here == before:
        return -1
    return moved[here, v]


@njit(cache=True)
def turned_after(sw, c, j, m, q):
    """The sorted position after column ``j`` takes its moved pair ``m``, into ``q``: every
    other pair turned to the opponent's view (``sw``, the position's pairs swapped), then
    sorted. A move is "turn the board, the played column's pair moved" (``PairTables.moved``),
    as :meth:`pipeline.games.knucklebones.game.Knucklebones.play` makes it in column order."""
    for k in range(c):
        q[k] = sw[k]
    q[j] = m
    sort_small(q, c)


@njit(cache=True)
def rank(q, c, binom):
    """The colex rank (the canonical state id) of the sorted pairs ``q[:c]``."""
    r = 0
    for i in range(c):
        r += binom[q[i] + i, i + 1]
    return r


@njit(cache=True)
def successors(pairs, row, c, f, moved, swap, binom, sw, q, ids, out):
    """Ids of every move's successor of the sorted pairs ``pairs[row]`` into ids[out, v * c + j]
    (-1: no such move, see :func:`move_pair`): column j takes face v + 1, then the position is
    seen by the opponent (:func:`turned_after`) and ranked. ``sw`` and ``q`` are scratch arrays
    of ``c`` entries."""
    for k in range(c):
        sw[k] = swap[pairs[row, k]]
    for v in range(f):
        for j in range(c):
            m = move_pair(pairs[row, j], pairs[row, max(j - 1, 0)], j, v, moved)
            if m < 0:
                ids[out, v * c + j] = -1
                continue
            turned_after(sw, c, j, m, q)
            ids[out, v * c + j] = rank(q, c, binom)


@njit(cache=True)
def dice(p, c, mover_size, opp_size):
    """Dice on each board of the pairs ``p[:c]``."""
    mine, theirs = 0, 0
    for k in range(c):
        mine += mover_size[p[k]]
        theirs += opp_size[p[k]]
    return mine, theirs


@njit(cache=True)
def ended(p, c, slots, mover_size, opp_size):
    """Whether the game is over: a board of the pairs ``p[:c]`` is full."""
    mine, theirs = dice(p, c, mover_size, opp_size)
    return mine == slots or theirs == slots


@njit(cache=True)
def score_diff(p, c, mover_score, opp_score):
    """The mover's total less the opponent's, of the pairs ``p[:c]``."""
    diff = 0
    for k in range(c):
        diff += mover_score[p[k]] - opp_score[p[k]]
    return diff


@njit(cache=True)
def final_value(p, c, mover_score, opp_score, wins):
    """Value of a finished game for the player to move (a draw is 1/2 for wins)."""
    diff = score_diff(p, c, mover_score, opp_score)
    if not wins:
        return float(diff)
    return 1.0 if diff > 0 else (0.0 if diff < 0 else 0.5)


@njit(cache=True)
def gain(p, v, moved, mover_score, opp_score):
    """The greedy player's measure of a move: the immediate change of the mover's score
    difference when face ``v + 1`` goes in a column holding pair ``p`` (its own dice counted
    again, the opponent's equal dice removed); :data:`NO_GAIN` where the column is full. The
    moved pair is seen by the opponent, so its scores swap sides."""
    m = moved[p, v]
    if m < 0:
        return NO_GAIN
    return (opp_score[m] - mover_score[p]) + (opp_score[p] - mover_score[m])


@njit(cache=True)
def gains(moved, mover_score, opp_score, out):
    """:func:`gain` of every pair and face into ``out`` ([pairs, faces])."""
    for p in range(out.shape[0]):
        for v in range(out.shape[1]):
            out[p, v] = gain(p, v, moved, mover_score, opp_score)


@njit(cache=True)
def combine(ids, lows, highs, row, c, f, offset):
    """New (lower, upper) bound of a live state from its successors' bounds: the mean over
    faces of the best move, a move's bounds being offset - upper(next), offset - lower(next).
    The antitone Bellman operator: the lower bound comes from the successors' upper bounds."""
    tot_lo, tot_hi = 0.0, 0.0
    for v in range(f):
        best_lo, best_hi = -1e300, -1e300  # below any value; every live face has a move
        for m in range(v * c, v * c + c):
            if ids[row, m] >= 0:
                best_lo = max(best_lo, offset - highs[row, m])
                best_hi = max(best_hi, offset - lows[row, m])
        tot_lo += best_lo
        tot_hi += best_hi
    return tot_lo / f, tot_hi / f
