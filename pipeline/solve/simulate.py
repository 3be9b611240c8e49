"""Monte Carlo play of a fixed policy on a game graph, compiled with numba.

The graph and policy are compiled into flat tables: for each state, a lookup from a uniform
integer in ``[0, denominator)`` to the decision node its roll leads to (or the cumulative counts
to scan when the lookup would be too large), and for each node the rows the policy may play with
their cumulative probabilities. Games are split into fixed chunks run in parallel (blocks of
chunks on threads: :mod:`pipeline.solve.threads`);
every game draws from its own counter-based stream (splitmix64 keyed by seed and game index), and
chunk totals are added in chunk order, so results are identical for any number of threads.

Each draw is one 64-bit number: its high 32 bits pick the roll (multiply-shift, bias below
denominator / 2**32), its low 32 bits pick among the node's moves when the policy mixes.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pipeline.graph import Graph
from pipeline.solve import threads
from pipeline.solve.compiled import kernel
from pipeline.solve.policy_eval import Policy, chosen_rows, stack

CHUNK = 1 << 15
ENDS = -1
MAX_LOOKUP = 1 << 24
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
STREAM = np.uint64(0xD1B54A32D192ED03)


@dataclass(frozen=True)
class Compiled:
    """A graph and policy flattened for the simulation kernel."""

    start: int
    terminal: np.ndarray  # bool [S]
    denom: np.ndarray  # uint64 [S]: roll denominator of the state's chosen choice
    lookup_start: np.ndarray  # int64 [S]: first chance row of each state (scan mode)
    lookup: np.ndarray  # int32 [S * width]: where uniform integer k leads from state s, at
    # s * width + k (width = the largest denominator; empty in scan mode)
    width: int
    cum_count: np.ndarray  # int64 [R]: cumulative roll counts per state (scan mode)
    row_target: np.ndarray  # int32 [R]: where each chance row leads (scan mode)
    row_end: np.ndarray  # int64 [S]: end offset of the state's chance rows (scan mode)
    mv_start: np.ndarray  # int64 [N + 1]: the node's playable rows in mv_dst / mv_cum
    mv_dst: np.ndarray  # int32 [K]: successor state (-1: the game ends)
    mv_cum: np.ndarray  # float64 [K]: cumulative probability of the node's rows
    mv_uniform: np.ndarray  # bool [N]: whether the node's playable rows are equally likely
    win: np.ndarray  # bool [S]: whether ending the game here counts as a win
    score: np.ndarray  # float64 [S]: the final score of ending here


@dataclass(frozen=True)
class SimResult:
    """Totals of a simulation run."""

    games: int
    wins: int
    score_sum: float
    score_sq_sum: float
    seconds: float

    @property
    def win_rate(self) -> float:
        """Fraction of games won."""
        return self.wins / self.games

    @property
    def mean_score(self) -> float:
        """Average final score."""
        return self.score_sum / self.games

    @property
    def score_se(self) -> float:
        """Standard error of the average final score."""
        mean = self.mean_score
        var = max(self.score_sq_sum / self.games - mean * mean, 0.0)
        return math.sqrt(var * self.games / max(self.games - 1, 1) / self.games)


def compile_policy(
    g: Graph, policy: Policy, start: int, win: np.ndarray, score: np.ndarray
) -> Compiled:
    """Flatten ``policy`` on ``g`` for :func:`simulate`; ``win``, ``score``: per end state."""
    stack(g, [policy])  # ValueError when the policy does not fit the graph
    rows = chosen_rows(g, policy.choice)
    states = g.ch_state[rows]
    denom, row_first, row_end, cum = _roll_tables(g, rows)
    mv = _move_tables(g, policy)
    target = _row_targets(g, rows, mv)
    # One row of `width` entries per state: the index is s * width + k, with no offset to load.
    width = int(denom.max()) if g.n_states else 0
    lookup = np.zeros(0, dtype=np.int32)
    if 0 < g.n_states * width <= MAX_LOOKUP:
        lookup = _dense_lookup(g.ch_count[rows], states, cum, target, g.n_states, width)
    return Compiled(
        start=start,
        terminal=~np.isnan(g.terminal),
        denom=denom,
        lookup_start=row_first,
        lookup=lookup,
        width=width,
        cum_count=cum,
        row_target=target,
        row_end=row_end,
        mv_start=mv.start,
        mv_dst=g.mv_dst[mv.keep].astype(np.int32),
        mv_cum=mv.cum,
        mv_uniform=mv.uniform,
        win=np.asarray(win, dtype=np.bool_),
        score=np.asarray(score, dtype=np.float64),
    )


def _roll_tables(
    g: Graph, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per state: the chosen roll denominator, first and end chance row; per row: cumulative
    counts restarted at each state (``rows``: the chance rows of the policy's choices)."""
    states = g.ch_state[rows]
    s = g.n_states
    denom = np.zeros(s, dtype=np.uint64)
    denom[states] = g.ch_denom[rows].astype(np.uint64)
    row_end = np.searchsorted(states, np.arange(s), side="right").astype(np.int64)
    row_first = np.searchsorted(states, np.arange(s), side="left").astype(np.int64)
    cum = np.zeros(rows.shape[0], dtype=np.int64)
    if rows.shape[0]:
        count = g.ch_count[rows]
        c = np.cumsum(count)
        first = row_first[states]
        cum = c - (c[first] - count[first])  # cumulative counts restarted at each state
    return denom, row_first, row_end, cum


class _MoveTables(NamedTuple):
    """The rows the policy may play (``keep``: move row indices), grouped by node."""

    keep: np.ndarray
    nodes: np.ndarray
    counts: np.ndarray
    start: np.ndarray
    cum: np.ndarray
    uniform: np.ndarray


def _move_tables(g: Graph, policy: Policy) -> _MoveTables:
    """Each node's playable rows, their cumulative probabilities, and whether they are equally
    likely."""
    keep = np.flatnonzero(policy.move_prob > 0)
    nodes = g.mv_node[keep]
    counts = np.bincount(nodes, minlength=g.node_state.shape[0])
    mv_start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    prob = policy.move_prob[keep]
    csum = np.cumsum(prob)
    first = mv_start[nodes]
    mv_cum = csum - (csum[first] - prob[first])
    # Nodes where every playable move is equally likely pick one by a multiply-shift, no scan.
    spread = np.zeros(counts.shape[0])
    np.maximum.at(spread, nodes, np.abs(prob - 1.0 / counts[nodes]))
    return _MoveTables(keep, nodes, counts, mv_start, mv_cum, spread <= 1e-15)


#: A mixed node's code (see :func:`_row_targets`) holds its playable row count in this many bits
#: when the rows are equally likely.
COUNT_BITS = 6


def _row_targets(g: Graph, rows: np.ndarray, mv: _MoveTables) -> np.ndarray:
    """int32 per chance row: where the roll leads -- the successor state when the policy plays
    one move there, ENDS when that move ends the game, or -2 - code when the policy mixes
    moves at the node. The code of a node whose playable rows are equally likely (the random
    strategy's) holds its first row and their count, ``(first << COUNT_BITS | count) << 1 | 1``,
    so that the kernel picks a move without reading the node's tables; any other node's code is
    ``node << 1``."""
    single = mv.counts == 1
    only_dst = np.full(mv.counts.shape[0], ENDS, dtype=np.int64)
    only_dst[mv.nodes[single[mv.nodes]]] = g.mv_dst[mv.keep][single[mv.nodes]]
    node = np.arange(mv.counts.shape[0], dtype=np.int64)
    packed = (mv.start[:-1] << COUNT_BITS | mv.counts) << 1 | 1
    fits = mv.uniform & (mv.counts < 1 << COUNT_BITS) & (packed < 2**31 - 2)
    code = np.where(fits, packed, node << 1)
    if code.max(initial=0) >= 2**31 - 2:
        raise ValueError("too many moves to simulate with 32-bit targets")
    node_of_row = g.ch_node[rows]
    target = np.where(single[node_of_row], only_dst[node_of_row], -2 - code[node_of_row])
    return target.astype(np.int32)


def _dense_lookup(
    count: np.ndarray,
    states: np.ndarray,
    cum: np.ndarray,
    target: np.ndarray,
    n_states: int,
    width: int,
) -> np.ndarray:
    """int32 [n_states * width]: where uniform integer k leads from state s, at s * width + k
    (each chance row's ``count`` entries hold its target)."""
    run_start = np.cumsum(count) - count  # where each row's run begins in the repeat below
    inside = np.arange(int(count.sum())) - np.repeat(run_start, count)
    pos = np.repeat(states * width + (cum - count), count) + inside
    lookup = np.full(n_states * width, ENDS, dtype=np.int32)
    lookup[pos] = np.repeat(target, count)
    return lookup


@kernel
def _mix(z: np.uint64) -> np.uint64:
    """splitmix64's output function."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@kernel
def _play(c_args: tuple, key: np.uint64) -> int:
    """Play one game from its stream key; return the state it ends in."""
    (
        start,
        terminal,
        denom,
        lookup_start,
        lookup,
        width,
        cum_count,
        row_target,
        row_end,
        mv_start,
        mv_dst,
        mv_cum,
        mv_uniform,
    ) = c_args
    use_lookup = lookup.shape[0] > 0
    s = start
    draw = np.uint64(0)
    while not terminal[s]:
        draw += np.uint64(1)
        x = _mix(key + draw * STREAM)
        k = np.int64(((x >> np.uint64(32)) * denom[s]) >> np.uint64(32))
        if use_lookup:
            t = lookup[s * width + k]
        else:
            r = lookup_start[s]
            while cum_count[r] <= k and r < row_end[s] - 1:
                r += 1
            t = row_target[r]
        if t < -1:
            code = np.int64(-2 - t)
            lo = x & np.uint64(0xFFFFFFFF)
            if code & 1:  # equally likely rows: first row and count are in the code
                n = np.uint64((code >> 1) & ((1 << COUNT_BITS) - 1))
                j = (code >> (COUNT_BITS + 1)) + np.int64((lo * n) >> np.uint64(32))
            else:
                node = code >> 1
                j = mv_start[node]
                last = mv_start[node + 1] - 1
                if mv_uniform[node]:
                    j += np.int64((lo * np.uint64(last - j + 1)) >> np.uint64(32))
                else:
                    u = np.float64(lo) * (1.0 / 4294967296.0)
                    while j < last and mv_cum[j] <= u:
                        j += 1
            t = mv_dst[j]
        if t < 0:
            return s
        s = t
    return s


@threads.on_blocks
@kernel
def _run_chunks(
    lo_chunk: int,
    hi_chunk: int,
    wins: np.ndarray,
    sums: np.ndarray,
    sq: np.ndarray,
    c_args: tuple,
    win: np.ndarray,
    score: np.ndarray,
    seed_key: np.uint64,
    games: int,
) -> None:
    """Play the games of chunks ``lo_chunk`` to ``hi_chunk - 1`` (:data:`CHUNK` games each, the
    last one shorter); per chunk: wins, score sum and squared-score sum."""
    for c in range(lo_chunk, hi_chunk):
        lo = c * CHUNK
        hi = min(lo + CHUNK, games)
        w = 0
        t = 0.0
        t2 = 0.0
        for game in range(lo, hi):
            key = _mix(seed_key + np.uint64(game) * GOLDEN)
            end = _play(c_args, key)
            if win[end]:
                w += 1
            v = score[end]
            t += v
            t2 += v * v
        wins[c] = w
        sums[c] = t
        sq[c] = t2


def seed_key(seed: int) -> np.uint64:
    """The 64-bit key of a user seed (any int)."""
    return np.uint64(int(_mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF))))


def kernel_args(c: Compiled) -> tuple:
    """The tables of ``c`` as the game kernel (``_play``) takes them."""
    return (
        np.int64(c.start),
        c.terminal,
        c.denom,
        c.lookup_start,
        c.lookup,
        np.int64(c.width),
        c.cum_count,
        c.row_target,
        c.row_end,
        c.mv_start,
        c.mv_dst,
        c.mv_cum,
        c.mv_uniform,
    )


def simulate(c: Compiled, games: int, seed: int) -> SimResult:
    """Play ``games`` games of the compiled policy with ``seed``; same seed, same result."""
    if games < 1:
        raise ValueError("games must be positive")
    t0 = time.perf_counter()
    n_chunks = (games + CHUNK - 1) // CHUNK
    wins = np.zeros(n_chunks, dtype=np.int64)
    sums = np.zeros(n_chunks, dtype=np.float64)
    sq = np.zeros(n_chunks, dtype=np.float64)
    # chunks in parallel, on threads: each chunk's games and sums are the same on any number
    _run_chunks(wins, sums, sq, kernel_args(c), c.win, c.score, seed_key(seed), games)
    seconds = time.perf_counter() - t0
    return SimResult(games, int(wins.sum()), float(sums.sum()), float(sq.sum()), seconds)


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95 % by default)."""
    if n <= 0:
        raise ValueError("need at least one trial")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
