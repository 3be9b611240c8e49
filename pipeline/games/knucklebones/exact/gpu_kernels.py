"""The GPU kernels of :mod:`~pipeline.games.knucklebones.exact.gpu` (imported only once numba-cuda
and a GPU, or the simulator, are known to be there).

``cuda`` is a module global here, not a closure variable: numba's CUDA simulator swaps the
globals of a kernel for its own fake module, and only globals. The rules of a move are the njit
functions of :mod:`pipeline.games.knucklebones.rules`, called from the kernels: numba-cuda
compiles them for the GPU as device functions.
"""

from __future__ import annotations

import os
import types
from typing import Any

from numba import cuda, float64, int64

from pipeline.games.knucklebones import rules


def interpreted(module: types.ModuleType) -> dict[str, Any]:
    """Every njit function of ``module`` as its Python source, calling the others as Python
    too (a copy of the module's globals where each njit function is its source)."""
    scope = dict(vars(module))
    found = {}
    for name, obj in vars(module).items():
        source = getattr(obj, "py_func", None)
        if isinstance(source, types.FunctionType):
            found[name] = types.FunctionType(
                source.__code__, scope, name, source.__defaults__, source.__closure__
            )
    scope.update(found)
    return found


# numba-cuda compiles the rules' njit functions (and those they call) for the GPU. The simulator
# hands kernels its own array wrappers, which compiled CPU functions cannot take: it runs the
# rules' Python source instead (the same definitions, interpreted, the functions they call too).
_simulated = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
_found = interpreted(rules) if _simulated else vars(rules)
unrank, successors, dice, final_value, combine, gain = (
    _found[k] for k in ("unrank", "successors", "dice", "final_value", "combine", "gain")
)


def make(c: int, f: int, tpb: int) -> tuple[Any, Any]:
    """The (init, sweep) kernels of a board of ``c`` columns and an ``f``-faced die: ``c`` and
    ``f`` are closure constants, so the scratch arrays have compile-time sizes."""
    n_moves = c * f
    reduce = block_max(tpb)

    @cuda.jit
    def init(n, n_pairs, slots, binom, mover_size, opp_size, mover_score, opp_score, wins,
             low, high, bounds):  # fmt: skip
        """Bounds of every id: a finished game's value (both bounds), else (low, high)."""
        p = cuda.local.array(c, int64)
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            unrank(i, c, n_pairs, binom, p)
            mine, theirs = dice(p, c, mover_size, opp_size)
            if mine == slots or theirs == slots:
                v = final_value(p, c, mover_score, opp_score, wins)
                bounds[i, 0] = v
                bounds[i, 1] = v
            else:
                bounds[i, 0] = low
                bounds[i, 1] = high

    @cuda.jit
    def sweep(n, n_pairs, moved, swap, binom, offset, bounds, out):
        """One sweep over every open id, in place, last id first; out[0] = max(out[0], largest
        change), out[1] = max(out[1], largest U - L), one atomic of each per block."""
        pairs = cuda.local.array((1, c), int64)
        sw = cuda.local.array(c, int64)
        q = cuda.local.array(c, int64)
        ids = cuda.local.array((1, n_moves), int64)
        lows = cuda.local.array((1, n_moves), float64)
        highs = cuda.local.array((1, n_moves), float64)
        ch, gp = 0.0, 0.0
        for k in range(cuda.grid(1), n, cuda.gridsize(1)):
            i = n - 1 - k
            old_lo, old_hi = float(bounds[i, 0]), float(bounds[i, 1])
            if old_lo == old_hi:  # terminal, or met: exact for good
                continue
            unrank(i, c, n_pairs, binom, pairs[0])
            successors(pairs, 0, c, f, moved, swap, binom, sw, q, ids, 0)
            read_bounds(ids, bounds, 0, lows, highs)
            new_lo, new_hi = combine(ids, lows, highs, 0, c, f, offset)
            ch, gp = store(bounds, i, new_lo, new_hi, old_lo, old_hi, ch, gp)
        reduce(ch, gp, out)

    return init, sweep


@cuda.jit(device=True)
def read_bounds(ids, bounds, base, lows, highs):
    """The bounds of each move's successor (its row ``base + id``) into ``lows``, ``highs``."""
    for m in range(ids.shape[1]):
        r = ids[0, m]
        if r >= 0:
            lows[0, m] = bounds[base + r, 0]
            highs[0, m] = bounds[base + r, 1]


@cuda.jit(device=True)
def store(bounds, i, new_lo, new_hi, old_lo, old_hi, ch, gp):
    """Row ``i``'s new bounds written; the largest change and U - L so far, of the stored
    (possibly rounded) bounds: what the stopping rule sees."""
    bounds[i, 0] = new_lo
    bounds[i, 1] = new_hi
    new_lo, new_hi = float(bounds[i, 0]), float(bounds[i, 1])
    return max(ch, abs(new_lo - old_lo), abs(new_hi - old_hi)), max(gp, new_hi - new_lo)


def block_max(tpb: int) -> Any:
    """The device function that ends a sweep (``tpb`` threads a block): each thread's largest
    change and U - L reduced over its block in shared memory, then one atomic max of each per
    block into ``out[0]`` and ``out[1]``."""

    @cuda.jit(device=True)
    def reduce(ch, gp, out):
        changes = cuda.shared.array(tpb, float64)
        gaps = cuda.shared.array(tpb, float64)
        t = cuda.threadIdx.x
        changes[t] = ch
        gaps[t] = gp
        cuda.syncthreads()
        s = tpb // 2
        while s > 0:
            if t < s:
                changes[t] = max(changes[t], changes[t + s])
                gaps[t] = max(gaps[t], gaps[t + s])
            cuda.syncthreads()
            s //= 2
        if t == 0:
            cuda.atomic.max(out, 0, changes[0])
            cuda.atomic.max(out, 1, gaps[0])

    return reduce


def make_gather() -> Any:
    """The kernel that reads the values (the bounds' midpoints, float64) of given state ids:
    ``out[k] = (bounds[ids[k], 0] + bounds[ids[k], 1]) / 2``. What a GPU solve hands to the
    host is then only the values asked for, never the full game's 77 GB of bounds."""

    @cuda.jit
    def gather(bounds, ids, out):
        for k in range(cuda.grid(1), ids.shape[0], cuda.gridsize(1)):
            i = ids[k]
            out[k] = (float(bounds[i, 0]) + float(bounds[i, 1])) / 2

    return gather


def make_greedy(c: int, f: int, tpb: int) -> Any:
    """The sweep kernel of greedy play against its best response (a board of ``c`` columns and
    an ``f``-faced die; see :func:`pipeline.games.knucklebones.exact.gpu.greedy_solve`).

    ``bounds`` holds ``2 n`` rows: row ``i < n`` is position ``i`` with the perfect player to
    move (W: the best move against greedy), row ``n + i`` the same position with greedy to move
    (G: the mean over greedy's tied moves of the largest immediate change of the score
    difference, :func:`rules.gain`; two columns holding the same pair are one move, as the
    player engine draws). W reads G's rows of its successors and
    G reads W's. Both updates are antitone in the other's values, so the two-sided bounds of
    the exact solver apply unchanged: ``L <- T(U)``, ``U <- T(L)``, in place, any order."""
    n_moves = c * f
    reduce = block_max(tpb)

    @cuda.jit
    def sweep(n, n_pairs, moved, swap, binom, mover_score, opp_score, offset, bounds, out):
        pairs = cuda.local.array((1, c), int64)
        sw = cuda.local.array(c, int64)
        q = cuda.local.array(c, int64)
        ids = cuda.local.array((1, n_moves), int64)
        lows = cuda.local.array((1, n_moves), float64)
        highs = cuda.local.array((1, n_moves), float64)
        gains = cuda.local.array(c, int64)
        ch, gp = 0.0, 0.0
        for k in range(cuda.grid(1), 2 * n, cuda.gridsize(1)):
            i = 2 * n - 1 - k
            old_lo, old_hi = float(bounds[i, 0]), float(bounds[i, 1])
            if old_lo == old_hi:  # terminal, or met: exact for good
                continue
            unrank(i if i < n else i - n, c, n_pairs, binom, pairs[0])
            successors(pairs, 0, c, f, moved, swap, binom, sw, q, ids, 0)
            if i < n:  # the perfect player moves: the best successor, greedy to move there
                read_bounds(ids, bounds, n, lows, highs)
                new_lo, new_hi = combine(ids, lows, highs, 0, c, f, offset)
            else:  # greedy moves: the mean over its tied moves, the perfect player there
                new_lo, new_hi = greedy_mean(pairs, ids, bounds, moved, mover_score, opp_score,
                                             offset, gains)  # fmt: skip
            ch, gp = store(bounds, i, new_lo, new_hi, old_lo, old_hi, ch, gp)
        reduce(ch, gp, out)

    return sweep


@cuda.jit(device=True)
def greedy_mean(pairs, ids, bounds, moved, mover_score, opp_score, offset, gains):
    """(lower, upper) bound of a position with greedy to move: over the die, the mean over its
    moves of the best immediate gain (:func:`rules.gain`; ``gains``: room for each column's)
    of the perfect player's value there, ``offset`` less its bounds."""
    c = gains.shape[0]
    f = ids.shape[1] // c
    new_lo, new_hi = 0.0, 0.0
    for v in range(f):
        best = rules.NO_GAIN
        for j in range(c):
            g = rules.NO_GAIN
            if ids[0, v * c + j] >= 0:  # a move (not a column holding the pair before)
                g = gain(pairs[0, j], v, moved, mover_score, opp_score)
            gains[j] = g
            best = max(best, g)
        lo_v, hi_v, tied = 0.0, 0.0, 0
        for j in range(c):
            r = ids[0, v * c + j]
            if r >= 0 and gains[j] == best:
                lo_v += offset - float(bounds[r, 1])
                hi_v += offset - float(bounds[r, 0])
                tied += 1
        new_lo += lo_v / tied
        new_hi += hi_v / tied
    return new_lo / f, new_hi / f
