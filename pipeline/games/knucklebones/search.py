"""Depth-limited expectimax for full-size Knucklebones, compiled with numba.

The search alternates chance nodes (a position before the roll: the average over die faces) and
decision nodes (a position and a die: the best column). Values are from the view of the player
to move; after a move the position is seen by the opponent, so a child's value ``(w, d)`` counts
as ``(1 - w, -d)`` for the parent. ``w`` is the probability of winning (a draw counts 1/2) and
``d`` the expected final score difference, both exact at finished games and estimated by a leaf
evaluation where the depth runs out. A transposition table keyed by (canonical state id, depth,
evaluator) shares the values of positions reached by different move orders -- and, because a
position's value depends only on its canonical form, it stays valid across the moves of a game.

Two evaluators:

* ``OURS`` maximises ``w`` (then ``d``). Its leaf estimate projects the final difference -- the
  current difference, plus for each player the expected gain of their best placement of their
  next die on the current board (stacking and removals included), plus 3.5 for each further
  placement before a board fills -- and turns it into a win probability with a logistic curve
  whose spread grows with the number of placements left.
* ``SEED`` is the Rust solver's: maximise ``d``, estimating a leaf by the current difference
  plus 3.5 per placement left to each player.

Depth counts die placements (plies): depth 1 looks at the positions after our move only.

A value is exact when every searched line -- every roll and every move considered at every
node, not only the moves chosen -- ends the game within the depth. On a board solved in the
tables, a searcher given the exact values (``known``) returns them wherever it meets a
position: those values are exact too, and marked as coming from the tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from pipeline.games.knucklebones import rules
from pipeline.games.knucklebones.evaluator import Evaluator, empty_net, net_leaf
from pipeline.games.knucklebones.game import Knucklebones
from pipeline.solve.ties import is_tie

OURS = 0
SEED = 1
#: The distilled evaluator's leaves (:mod:`pipeline.games.knucklebones.evaluator`): maximise
#: the win chance then the difference (``NET``), or the difference (``NET_SCORE``).
NET = 2
NET_SCORE = 3
#: A close call: the best two columns within this much win chance (or this much of the score
#: difference over 30 points, for the difference's kinds), searched again deeper where a player
#: deepens its close calls (``net-d4+6``): where a shallow search's error decides the pick.
CLOSE = 0.005
#: Average die value: what the Rust solver's heuristic counts per placement left.
MEAN_DIE = 3.5
#: Logistic slope of the win estimate (Phi(x) ~ logistic(1.7 x)), and the spread of the final
#: difference: sqrt(SPREAD0 + SPREAD1 * placements left).
SLOPE = 1.7
SPREAD0 = 4.0
SPREAD1 = 20.0
TT_BITS = 22
#: How exact a searched value is (the third number of a search result).
ESTIMATE = 0.0
ENDED = 1.0
TABLES = 2.0


@dataclass(frozen=True)
class Eval:
    """A search result from the mover's view."""

    win: float
    """Probability of winning (a draw counts 1/2): exact when ``exact``, else estimated."""
    diff: float
    """Expected final score difference (mover minus opponent) under the searched play (where
    it comes from tables: under play that maximises the difference, the `-score` variant)."""
    exact: bool
    """True when every line searched -- every roll, every move considered -- ended the game or
    reached a position whose value was looked up in exact tables (no leaf estimate was used)."""
    from_tables: bool = False
    """True when the value is exact and some of it was looked up in tables."""


class Searcher:
    """Expectimax with a transposition table for one rule set; reuse it across a game."""

    def __init__(
        self,
        game: Knucklebones,
        tt_bits: int = TT_BITS,
        known: np.ndarray | None = None,
        evaluator: Evaluator | None = None,
    ) -> None:
        """``known``: exact (win, diff) of every state by state id, looked up instead of
        searched; None searches everything. (The answers do not search a board whose tables
        are built: they read them, :mod:`pipeline.answer.boards`.) ``evaluator``: the
        distilled evaluator of the board, which the ``NET`` kinds read at their leaves."""
        self.game = game
        self.evaluator = evaluator
        self.net = empty_net() if evaluator is None else evaluator.packed(game.t)
        t = game.t
        self.arrays = (
            t.place,
            t.swap,
            t.moved,
            t.mover_size,
            t.opp_size,
            t.mover_score,
            t.opp_score,
            game.binom,
        )
        self.slots = game.r.slots
        self.faces = game.r.faces
        self.tt_key = np.full(1 << tt_bits, -1, dtype=np.int64)
        self.tt_val = np.zeros((1 << tt_bits, 3), dtype=np.float64)
        self.params = np.array([MEAN_DIE, SLOPE, SPREAD0, SPREAD1])
        if known is not None and known.shape != (game.n_states, 2):
            raise ValueError(f"known values must have shape ({game.n_states}, 2)")
        # Zero rows tell the compiled search that there is no lookup.
        self.known = np.zeros((0, 2)) if known is None else np.ascontiguousarray(known, float)

    def _common(self) -> tuple:
        return (
            *self.arrays, self.slots, self.faces, self.tt_key, self.tt_val, self.params,
            self.known, self.net,
        )  # fmt: skip

    def _check(self, kind: int) -> None:
        if kind in (NET, NET_SCORE) and self.evaluator is None:
            raise ValueError("this search has no evaluator (Searcher(evaluator=...))")

    def evaluate(self, pairs: np.ndarray, depth: int, kind: int = OURS) -> Eval:
        """Value of a position before the roll (chance node), searching ``depth`` placements."""
        self._check(kind)
        w, d, ex = chance_value(np.sort(pairs).astype(np.int64), depth, kind, *self._common())
        return _eval(w, d, ex)

    def move_values(
        self, pairs: np.ndarray, face: int, depth: int, kind: int = OURS
    ) -> list[tuple[int, Eval]]:
        """Every distinct legal column (index into sorted ``pairs``) with its value for the die."""
        self._check(kind)
        srt = np.sort(pairs).astype(np.int64)
        out = np.zeros((srt.shape[0], 4))
        n = move_table(srt, face, depth, kind, out, *self._common())
        return [(int(out[i, 0]), _eval(out[i, 1], out[i, 2], out[i, 3])) for i in range(n)]

    def best_move(
        self, pairs: np.ndarray, face: int, depth: int, kind: int = OURS, deeper: int = 0
    ) -> tuple[int, Eval]:
        """The best column for the die as an index into ``pairs`` (its own column order);
        where ``deeper`` exceeds ``depth``, a close call (:func:`close_call`) is searched again
        ``deeper`` placements deep."""
        moves = self.move_values(pairs, face, depth, kind)
        if not moves:
            raise ValueError("no legal move: the board is full")
        by_diff = kind not in (OURS, NET)
        if deeper > depth and close_call([ev for _, ev in moves], by_diff):
            moves = self.move_values(pairs, face, deeper, kind)
        key = (lambda m: m[1].diff) if by_diff else (lambda m: (m[1].win, m[1].diff))
        j, ev = max(moves, key=key)
        target = np.sort(pairs)[j]
        return int(np.flatnonzero(pairs == target)[0]), ev


def close_call(values: list[Eval], by_diff: bool = False) -> bool:
    """Whether the best two of ``values`` (a decision's columns) are within :data:`CLOSE` of
    each other (in win chance, or ``by_diff`` in the score difference over 30 points) and not
    both exact: a pick a deeper search may change."""
    if len(values) < 2:
        return False
    key = (lambda e: e.diff / 30.0) if by_diff else (lambda e: e.win)
    first, second = sorted(values, key=key, reverse=True)[:2]
    return key(first) - key(second) < CLOSE and not (first.exact and second.exact)


def budget_depth(game: Knucklebones, pairs: np.ndarray, leaves: int, deepest: int = 8) -> int:
    """The deepest search (1..``deepest``) whose leaves, estimated from each player's open
    columns now (a die's faces times the columns it can go in, placement by placement, the
    mover first), are at most ``leaves``: deeper where the boards are nearly full, where the
    branching is small and the values are sharp. Deterministic: the same position, the same
    depth on every machine."""
    t, r = game.t, game.r
    open_m = int((t.mover_size[pairs] < r.rows).sum())
    open_o = int((t.opp_size[pairs] < r.rows).sum())
    count, depth = 1, 0
    while depth < deepest:
        count *= r.faces * max(open_m if depth % 2 == 0 else open_o, 1)
        if count > leaves and depth >= 1:
            break
        depth += 1
    return depth


def _eval(win: float, diff: float, exactness: float) -> Eval:
    return Eval(float(win), float(diff), exactness != ESTIMATE, exactness == TABLES)


def greedy_gain(
    pairs: np.ndarray, face: int, place: np.ndarray, mover_score, opp_score
) -> np.ndarray:
    """Immediate change of the score difference for each column (-inf where it is full)."""
    new = place[pairs, face - 1]
    gain = (mover_score[new] - mover_score[pairs]) + (opp_score[pairs] - opp_score[new])
    return np.where(new >= 0, gain, -np.inf)


@numba.njit(cache=True)
def _best_gain(pairs, place, mover_score, opp_score, faces):
    """Expected best immediate score-difference gain of the mover's next die."""
    total = 0.0
    for f in range(faces):
        best = -1e9
        for j in range(pairs.shape[0]):
            p = pairs[j]
            q = place[p, f]
            if q >= 0:
                g = (mover_score[q] - mover_score[p]) + (opp_score[p] - opp_score[q])
                if g > best:
                    best = g
        total += best if best > -1e9 else 0.0
    return total / faces


@numba.njit(cache=True)
def _leaf(pairs, kind, place, swap, mover_size, opp_size, mover_score, opp_score, slots,
          faces, params, net):  # fmt: skip
    """Estimated (win, diff) of an unfinished position for the player to move."""
    if kind >= NET:
        return net_leaf(pairs, mover_size, opp_size, net)
    diff = 0.0
    e_m = slots
    e_o = slots
    for i in range(pairs.shape[0]):
        diff += mover_score[pairs[i]] - opp_score[pairs[i]]
        e_m -= mover_size[pairs[i]]
        e_o -= opp_size[pairs[i]]
    # Placements left if nothing is removed: the mover moves first.
    if e_m <= e_o:
        k_m, k_o = e_m, e_m - 1
    else:
        k_m, k_o = e_o, e_o
    mean = params[0]
    if kind == 1:
        d = diff + mean * (k_m - k_o)
        return 0.5 + 0.5 * np.sign(d), d
    g_m = _best_gain(pairs, place, mover_score, opp_score, faces)
    g_o = _best_gain(_turned(pairs, swap), place, mover_score, opp_score, faces) if k_o > 0 else 0.0
    d = diff + g_m - g_o + mean * ((k_m - 1) - max(k_o - 1, 0))
    spread = np.sqrt(params[2] + params[3] * (k_m + k_o))
    w = 1.0 / (1.0 + np.exp(-params[1] * d / spread))
    return w, d


@numba.njit(cache=True)
def _final_diff(pairs, mover_size, opp_size, mover_score, opp_score, slots):
    """(whether the game is over -- a board is full --, the mover's score difference)."""
    m_full = 0
    o_full = 0
    diff = 0.0
    for i in range(pairs.shape[0]):
        m_full += mover_size[pairs[i]]
        o_full += opp_size[pairs[i]]
        diff += mover_score[pairs[i]] - opp_score[pairs[i]]
    return m_full == slots or o_full == slots, diff


@numba.njit(cache=True)
def _tt_slot(key, tt_key):
    """Where ``key`` lives in the transposition table (a multiplicative hash)."""
    return ((key * 0x5BD1E9955BD1E99) >> 20) & (tt_key.shape[0] - 1)


@numba.njit(cache=True)
def _tt_store(tt_key, tt_val, slot, key, w, d, exact):
    """Remember (win, diff, exactness) of ``key`` in its slot, replacing what was there."""
    tt_key[slot] = key
    tt_val[slot, 0] = w
    tt_val[slot, 1] = d
    tt_val[slot, 2] = exact


@numba.njit(cache=True)
def _better(kind, w, d, bw, bd):
    """Whether (w, d) beats the best so far: ours by win probability, then difference; the
    Rust solver's by difference."""
    tie = is_tie(w, bw)
    if kind in (OURS, NET):
        return (w > bw and not tie) or (tie and d > bd)
    return d > bd


@numba.njit(cache=True)
def _turned(pairs, swap):
    """Every pair of ``pairs`` seen by the opponent (not sorted): the board turned."""
    out = np.empty_like(pairs)
    for i in range(pairs.shape[0]):
        out[i] = swap[pairs[i]]
    return out


@numba.njit(cache=True)
def chance_value(pairs, depth, kind, place, swap, moved, mover_size, opp_size, mover_score,
                 opp_score, binom, slots, faces, tt_key, tt_val, params, known,
                 net):  # fmt: skip
    """(win, diff, exactness) of a sorted position before the roll, searching ``depth`` plies.

    Exactness: ESTIMATE when some searched line -- any roll, any move considered, not only the
    moves chosen -- stopped at a leaf estimate; ENDED when every line ended the game; TABLES
    when every line ended the game or reached a position looked up in ``known`` (rows: win,
    diff by state id; zero rows: no lookup).
    """
    ended, diff = _final_diff(pairs, mover_size, opp_size, mover_score, opp_score, slots)
    if ended:
        return 0.5 + 0.5 * np.sign(diff), diff, ENDED
    c = pairs.shape[0]
    if known.shape[0] > 0:
        # Solved exactly already: the table's value beats any search of any depth.
        r = rules.rank(pairs, c, binom)
        return known[r, 0], known[r, 1], TABLES
    if depth == 0:
        w, d = _leaf(
            pairs, kind, place, swap, mover_size, opp_size, mover_score, opp_score, slots,
            faces, params, net,
        )  # fmt: skip
        return w, d, ESTIMATE
    key = (rules.rank(pairs, c, binom) * 64 + depth) * 4 + kind
    slot = _tt_slot(key, tt_key)
    if tt_key[slot] == key:
        return tt_val[slot, 0], tt_val[slot, 1], tt_val[slot, 2]
    tw, td = 0.0, 0.0
    ex_lo, ex_hi = TABLES, ENDED
    sw = _turned(pairs, swap)
    for f in range(faces):
        bw, bd = -1.0, -1e18
        for j in range(c):
            # the rules' move (rules.py): the column's pair moved, the board turned
            m = rules.move_pair(pairs[j], pairs[max(j - 1, 0)], j, f, moved)
            if m < 0:
                continue
            child = np.empty_like(pairs)
            rules.turned_after(sw, c, j, m, child)
            cw, cd, cx = chance_value(
                child, depth - 1, kind, place, swap, moved, mover_size, opp_size, mover_score,
                opp_score, binom, slots, faces, tt_key, tt_val, params, known, net,
            )  # fmt: skip
            # Every move considered counts, not just the one chosen: the best move's value is
            # exact only if the moves it was compared with were exact too.
            ex_lo = min(ex_lo, cx)
            ex_hi = max(ex_hi, cx)
            if _better(kind, 1.0 - cw, -cd, bw, bd):
                bw, bd = 1.0 - cw, -cd
        tw += bw
        td += bd
    exact = ESTIMATE if ex_lo == ESTIMATE else ex_hi
    _tt_store(tt_key, tt_val, slot, key, tw / faces, td / faces, exact)
    return tw / faces, td / faces, exact


@numba.njit(cache=True)
def move_table(pairs, face, depth, kind, out, place, swap, moved, mover_size, opp_size,
               mover_score, opp_score, binom, slots, faces, tt_key, tt_val, params,
               known, net):  # fmt: skip
    """Fill ``out`` rows with (column, win, diff, exactness) of each distinct legal move; count."""
    n = 0
    sw = _turned(pairs, swap)
    c = pairs.shape[0]
    for j in range(c):
        m = rules.move_pair(pairs[j], pairs[max(j - 1, 0)], j, face - 1, moved)
        if m < 0:
            continue
        child = np.empty_like(pairs)
        rules.turned_after(sw, c, j, m, child)
        cw, cd, cx = chance_value(
            child, depth - 1, kind, place, swap, moved, mover_size, opp_size, mover_score,
            opp_score, binom, slots, faces, tt_key, tt_val, params, known, net,
        )  # fmt: skip
        out[n, 0] = j
        out[n, 1] = 1.0 - cw
        out[n, 2] = -cd
        out[n, 3] = cx
        n += 1
    return n


def logistic_win(diff: float, placements_left: int) -> float:
    """The leaf curve on its own (for documentation and tests)."""
    spread = math.sqrt(SPREAD0 + SPREAD1 * placements_left)
    return 1.0 / (1.0 + math.exp(-SLOPE * diff / spread))
