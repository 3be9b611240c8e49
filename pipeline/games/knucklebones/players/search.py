"""Depth-limited expectimax for Knucklebones, compiled with numba.

The search alternates chance nodes (a position before the roll: the average over die faces) and
decision nodes (a position and a die: the best column). Values are from the view of the player
to move; after a move the position is seen by the opponent, so a child's value ``(w, d)`` counts
as ``(1 - w, -d)`` for the parent. ``w`` is the probability of winning (a draw counts 1/2) and
``d`` the expected final score difference, both exact at finished games and estimated by a leaf
evaluation where the depth runs out. A transposition table keyed by (canonical state id, depth,
evaluator) shares the values of positions reached by different move orders -- and, because a
position's value depends only on its canonical form, it stays valid across the moves of a game.

The leaf evaluations (``kind``):

* ``OURS`` maximises ``w`` (then ``d``). Its leaf estimate projects the final difference -- the
  current difference, plus for each player the expected gain of their best placement of their
  next die on the current board (stacking and removals included), plus 3.5 for each further
  placement before a board fills -- and turns it into a win probability with a logistic curve
  whose spread grows with the number of placements left.
* ``SEED`` is the Rust solver's: maximise ``d``, estimating a leaf by the current difference
  plus 3.5 per placement left to each player.
* ``NET`` (``NET_SCORE``) reads an evaluator at the leaves
  (:mod:`pipeline.games.knucklebones.players.evaluator`: any object with its ``packed``), and
  maximises ``w`` then ``d`` (``d``).

Depth counts die placements (plies): depth 1 looks at the positions after our move only. Every
decision, inside the tree and at its root, is the one pick (:func:`best_row`): the tie rule of
:mod:`pipeline.solve.tolerance` on the kind's objective, then the other one, then the first
column in the position's canonical order (the emptiest facing pair: estimates tie for reasons
they miss, and the players were always measured so).

A value is exact when every searched line -- every roll and every move considered at every
node, not only the moves chosen -- ends the game within the depth. On a board solved in the
tables, a searcher given the exact values (``known``) returns them wherever it meets a
position: those values are exact too, and marked as coming from the tables.

The kernels are compiled as the solvers' are (:mod:`pipeline.solve.compiled`): on their first call,
kept on disk, always called with the same types (the board's arrays in one
:class:`~pipeline.games.knucklebones.rules.Tables`, the search's own in one :class:`State`),
and allocating nothing: the positions of the line searched, their turned boards and each decision's
move values live in the state's rows, one per placement below the root.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import takewhile
from typing import Any, NamedTuple, cast

import numba
import numpy as np

from pipeline import progress
from pipeline.games.knucklebones import rules
from pipeline.games.knucklebones.game import Knucklebones
from pipeline.games.knucklebones.players.evaluator import empty_net, net_leaf
from pipeline.solve.compiled import inline_kernel, kernel
from pipeline.solve.ties import pick_two

OURS = 0
SEED = 1
#: The distilled evaluator's leaves (:mod:`pipeline.games.knucklebones.players.evaluator`):
#: maximise the win chance then the difference (``NET``), or the difference (``NET_SCORE``).
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
#: Rows of a search's line: the deepest search a searcher takes is LEVELS - 1 placements.
LEVELS = 40
#: What the terminal says while a first run compiles the search (:func:`compiled`).
COMPILING = "compiling the Knucklebones search (the first run only: numba keeps it on disk)"


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


class State(NamedTuple):
    """A searcher's own arrays, as its kernels take them."""

    tt_key: np.ndarray
    tt_val: np.ndarray
    params: np.ndarray
    """The leaf's constants (MEAN_DIE, SLOPE, SPREAD0, SPREAD1) and the close call's margin
    (CLOSE, read again at each search asked from Python)."""
    known: np.ndarray
    """Exact (win, diff) by state id, looked up instead of searched (zero rows: none)."""
    net: Any
    """The evaluator read at the ``NET`` leaves, packed (:class:`~.evaluator.Net`)."""
    stack: np.ndarray
    """[LEVELS, columns]: the sorted position at each placement of the line searched (row 0:
    the root, which the caller writes)."""
    turned: np.ndarray
    """[LEVELS, columns]: each row's pairs seen by the opponent."""
    rows: np.ndarray
    """[LEVELS, columns, 4]: each decision's moves (column, win, diff, exactness); after a
    search of one die at the root, row 0 holds its moves, a column -1 after the last."""


class Searcher:
    """Expectimax with a transposition table for one rule set; reuse it across a game (one
    search at a time: its state is its own)."""

    def __init__(
        self,
        game: Knucklebones,
        tt_bits: int = TT_BITS,
        known: np.ndarray | None = None,
        evaluator: Any = None,
    ) -> None:
        """``known``: exact (win, diff) of every state by state id, looked up instead of
        searched; None searches everything. (The answers do not search a board whose tables
        are built: they read them, :mod:`pipeline.answer.boards`.) ``evaluator``: what the
        ``NET`` kinds read at their leaves: any object whose ``packed(t)`` returns the leaf's
        arrays (:meth:`~pipeline.games.knucklebones.players.evaluator.Evaluator.packed`)."""
        self.game = game
        self.evaluator = evaluator
        self.board = rules.tables(game.r)
        if known is not None and known.shape != (game.n_states, 2):
            raise ValueError(f"known values must have shape ({game.n_states}, 2)")
        c = game.r.columns
        self.state = State(
            np.full(1 << tt_bits, -1, dtype=np.int64),
            np.zeros((1 << tt_bits, 3), dtype=np.float64),
            np.array([MEAN_DIE, SLOPE, SPREAD0, SPREAD1, CLOSE]),
            # zero rows tell the compiled search that there is no lookup
            np.zeros((0, 2)) if known is None else np.ascontiguousarray(known, float),
            empty_net() if evaluator is None else evaluator.packed(game.t),
            np.zeros((LEVELS, c), dtype=np.int64),
            np.zeros((LEVELS, c), dtype=np.int64),
            np.zeros((LEVELS, c, 4)),
        )

    def check(self, kind: int, depth: int) -> None:
        """ValueError for a ``NET`` kind without an evaluator, or a depth out of reach."""
        if kind in (NET, NET_SCORE) and self.evaluator is None:
            raise ValueError("this search has no evaluator (Searcher(evaluator=...))")
        if not 0 <= depth < LEVELS:
            raise ValueError(f"a search goes 0 to {LEVELS - 1} placements deep, not {depth}")

    def root(self, pairs: np.ndarray, kind: int, depth: int) -> np.ndarray:
        """Set the position searched next (any column order), ``kind`` ``depth`` deep
        (:meth:`check`); its sorted pairs."""
        self.check(kind, depth)
        srt = np.sort(np.asarray(pairs, dtype=np.int64))
        self.state.stack[0, :] = srt
        self.state.params[4] = CLOSE
        return srt

    def searches(self) -> Any:
        """The compiled search (said on the terminal where it compiles: :func:`compiled`)."""
        return compiled(search, 0, 0, -1, 0, self.board, self.state)

    def evaluate(self, pairs: np.ndarray, depth: int, kind: int = OURS) -> Eval:
        """Value of a position before the roll (chance node), searching ``depth`` placements."""
        self.root(pairs, kind, depth)
        return _eval(*self.searches()(0, depth, -1, kind, self.board, self.state))

    def move_values(
        self, pairs: np.ndarray, face: int, depth: int, kind: int = OURS
    ) -> list[tuple[int, Eval]]:
        """Every distinct legal column (index into sorted ``pairs``) with its value for the die."""
        self.root(pairs, kind, depth)
        self.searches()(0, depth, face - 1, kind, self.board, self.state)
        return self._moves()

    def decide(
        self, pairs: np.ndarray, face: int, depth: int, kind: int = OURS, deeper: int = 0,
        by_diff: bool | None = None, leaves: int = 0,
    ) -> tuple[int, list[tuple[int, Eval]], int]:  # fmt: skip
        """The player's decision: every distinct legal column's value (as :meth:`move_values`)
        ``depth`` deep, or ``deeper`` where that is deeper and the best two are a close call
        (:func:`close_call`, in the kind's objective, or ``by_diff`` in the score
        difference), as far as ``leaves`` allows (:func:`close_depth`; 0: no bound); (the
        depth searched, the values, the pick's index among them)."""
        self.root(pairs, kind, max(depth, deeper))
        self.searches()
        diff = (kind in (SEED, NET_SCORE)) if by_diff is None else by_diff
        # the kernel's own source, run here: it calls the compiled search, and a first answer
        # does not compile (and link the search into) a second entry point
        source = cast(Any, decide).py_func
        best, searched = source(depth, deeper, leaves, face - 1, kind, diff, self.board, self.state)
        return int(searched), self._moves(), int(best)

    def best_move(
        self, pairs: np.ndarray, face: int, depth: int, kind: int = OURS, deeper: int = 0,
        leaves: int = 0,
    ) -> tuple[int, Eval]:  # fmt: skip
        """The player's column for the die (:meth:`decide`) as an index into ``pairs`` (its
        own column order: the first holding the picked pair), and its value."""
        _, moves, best = self.decide(pairs, face, depth, kind, deeper, leaves=leaves)
        if best < 0:
            raise ValueError("no legal move: the board is full")
        j, ev = moves[best]
        target = np.sort(pairs)[j]
        return int(np.flatnonzero(np.asarray(pairs) == target)[0]), ev

    def values(
        self, positions: np.ndarray, depth: int, kind: int = OURS
    ) -> tuple[np.ndarray, np.ndarray]:
        """The search's values of many positions (rows of facing pairs, any order): [n, 3]
        (win, diff, exactness) of each position before the roll, and [n, faces * columns, 3]
        of each choice (die index * columns + the column's place in the sorted position; NaN:
        no move), each ``depth`` placements deep: what a fit to searched values reads."""
        self.check(kind, depth)
        srt = np.sort(np.asarray(positions, dtype=np.int64), axis=1)
        b = self.board
        value = np.empty((srt.shape[0], 3))
        choices = np.empty((srt.shape[0], b.faces * b.columns, 3))
        compiled(search_many, srt, depth, kind, b, self.state, value, choices)(
            srt, depth, kind, b, self.state, value, choices
        )
        return value, choices

    def _moves(self) -> list[tuple[int, Eval]]:
        moves = takewhile(lambda r: r[0] >= 0, self.state.rows[0])  # a column -1 after the last
        return [(int(r[0]), _eval(r[1], r[2], r[3])) for r in moves]


def compiled(kernel: Any, *args: Any) -> Any:
    """``kernel``, compiled for ``args``' types where this process has not yet (or read from
    numba's cache, where a run before kept it), saying so on the terminal when that takes more
    than a second: a person's first search compiles for seconds, and nothing else would say
    why it waits."""
    if not kernel.signatures:
        with progress.task(COMPILING, show_after=1.0):
            kernel.compile(tuple(numba.typeof(a) for a in args))
    return kernel


def close_call(values: list[Eval], by_diff: bool = False) -> bool:
    """Whether the best two of ``values`` (a decision's columns) are within :data:`CLOSE` of
    each other (in win chance, or ``by_diff`` in the score difference over 30 points) and not
    both exact: a pick a deeper search may change (:func:`is_close`, from Python)."""
    rows = np.array([[0.0, e.win, e.diff, ENDED if e.exact else ESTIMATE] for e in values])
    return bool(cast(Any, is_close).py_func(rows.reshape(-1, 4), len(values), by_diff, CLOSE))


def _eval(win: float, diff: float, exactness: float) -> Eval:
    return Eval(float(win), float(diff), bool(exactness != ESTIMATE), bool(exactness == TABLES))


# -- the kernels ---------------------------------------------------------------------------


@inline_kernel
def best_row(rows, n, kind):
    """The one pick among a decision's ``n`` moves (rows: column, win, diff, exactness; in
    canonical order): the tie rule on the kind's objective (win chance for ``OURS`` and
    ``NET``, the difference for the others), then the other, then the first column
    (:func:`pipeline.solve.tolerance.pick_two`); -1 when there is none."""
    first, then = (1, 2) if kind in (OURS, NET) else (2, 1)
    k, _ = pick_two(rows[:, first], rows[:, then], 0, n)
    return k


@inline_kernel
def is_close(rows, n, by_diff, margin):
    """Whether the best two of a decision's ``n`` moves are a close call: within ``margin``
    (:data:`CLOSE`) in win chance (``by_diff``: in the difference over 30 points), and not
    both exact."""
    if n < 2:
        return False
    col, scale = (2, 30.0) if by_diff else (1, 1.0)
    first, second, a, b = -np.inf, -np.inf, -1, -1
    for k in range(n):
        v = rows[k, col] / scale
        if v > first:
            second, b = first, a
            first, a = v, k
        elif v > second:
            second, b = v, k
    return first - second < margin and not (rows[a, 3] != ESTIMATE and rows[b, 3] != ESTIMATE)


@inline_kernel
def _best_gain(pairs, c, board):
    """Expected best immediate score-difference gain of the mover's next die."""
    total = 0.0
    for f in range(board.faces):
        best = -1e9
        for j in range(c):
            g = rules.gain(pairs[j], f, board.moved, board.mover_score, board.opp_score)
            if g != rules.NO_GAIN and g > best:
                best = g
        total += best if best > -1e9 else 0.0
    return total / board.faces


@inline_kernel
def _leaf(level, kind, board, state):
    """Estimated (win, diff) of the unfinished position ``state.stack[level]`` for the player
    to move."""
    pairs = state.stack[level]
    if kind >= NET:
        return net_leaf(pairs, board.mover_size, board.opp_size, state.net)
    c = pairs.shape[0]
    diff = float(rules.score_diff(pairs, c, board.mover_score, board.opp_score))
    mine, theirs = rules.dice(pairs, c, board.mover_size, board.opp_size)
    e_m, e_o = board.slots - mine, board.slots - theirs
    # Placements left if nothing is removed: the mover moves first.
    if e_m <= e_o:
        k_m, k_o = e_m, e_m - 1
    else:
        k_m, k_o = e_o, e_o
    params = state.params
    if kind == SEED:
        d = diff + params[0] * (k_m - k_o)
        return 0.5 + 0.5 * np.sign(d), d
    g_m = _best_gain(pairs, c, board)
    g_o = 0.0
    if k_o > 0:  # the opponent's next die, on the board turned
        turned = state.turned[level]
        for k in range(c):
            turned[k] = board.swap[pairs[k]]
        g_o = _best_gain(turned, c, board)
    d = diff + g_m - g_o + params[0] * ((k_m - 1) - max(k_o - 1, 0))
    spread = np.sqrt(params[2] + params[3] * (k_m + k_o))
    return 1.0 / (1.0 + np.exp(-params[1] * d / spread)), d


@inline_kernel
def _tt_slot(key, tt_key):
    """Where ``key`` lives in the transposition table (a multiplicative hash)."""
    return ((key * 0x5BD1E9955BD1E99) >> 20) & (tt_key.shape[0] - 1)


@kernel
def search(level, depth, face, kind, board, state):
    """(win, diff, exactness) of the sorted position ``state.stack[level]``, searching ``depth``
    placements: before the roll (the mean over the die of each face's pick), or at the root
    (``level`` 0) for one die where ``face`` is a face index (its pick's value, every move's in
    ``state.rows[0]``). Kernels call it with typed arguments only (``np.int64(0)``, and the
    recursion passes ``face`` on unchanged): a literal argument compiles a second version of a
    recursive kernel, which numba's cache does not keep (the caller loaded from it crashes).

    Exactness: ESTIMATE when some searched line -- any roll, any move considered, not only the
    moves chosen -- stopped at a leaf estimate; ENDED when every line ended the game; TABLES
    when every line ended the game or reached a position looked up in ``state.known``.
    """
    pairs = state.stack[level]
    c = board.columns
    key, slot = -1, 0
    one = level == 0 and face >= 0
    if not one:
        if rules.ended(pairs, c, board.slots, board.mover_size, board.opp_size):
            diff = float(rules.score_diff(pairs, c, board.mover_score, board.opp_score))
            return 0.5 + 0.5 * np.sign(diff), diff, ENDED
        if state.known.shape[0] > 0:
            # Solved exactly already: the table's value beats any search of any depth.
            r = rules.rank(pairs, c, board.binom)
            return state.known[r, 0], state.known[r, 1], TABLES
        if depth <= 0 and kind < NET:
            w, d = _leaf(level, kind, board, state)  # cheaper than a table lookup
            return w, d, ESTIMATE
        key = (rules.rank(pairs, c, board.binom) * 64 + max(depth, 0)) * 4 + kind
        slot = _tt_slot(key, state.tt_key)
        if state.tt_key[slot] == key:
            return state.tt_val[slot, 0], state.tt_val[slot, 1], state.tt_val[slot, 2]
        if depth <= 0:
            # an evaluator's leaf costs thousands of multiply-adds: the table keeps it too,
            # for the leaves that several move orders reach (half of them, four deep)
            w, d = _leaf(level, kind, board, state)
            return _keep(state, slot, key, w, d, ESTIMATE)
    sw = state.turned[level]
    for k in range(c):
        sw[k] = board.swap[pairs[k]]
    rows = state.rows[level]
    lo, hi = (face, face + 1) if one else (0, board.faces)
    tw, td = 0.0, 0.0
    ex_lo, ex_hi = TABLES, ENDED
    for f in range(lo, hi):
        n = 0
        for j in range(c):
            # the rules' move (rules.py): the column's pair moved, the board turned
            m = rules.move_pair(pairs[j], pairs[max(j - 1, 0)], j, f, board.moved)
            if m < 0:
                continue
            rules.turned_after(sw, c, j, m, state.stack[level + 1])
            cw, cd, cx = search(level + 1, depth - 1, face, kind, board, state)
            rows[n, 0] = j
            rows[n, 1] = 1.0 - cw
            rows[n, 2] = -cd
            rows[n, 3] = cx
            # Every move considered counts, not just the one chosen: the best move's value is
            # exact only if the moves it was compared with were exact too.
            ex_lo = min(ex_lo, cx)
            ex_hi = max(ex_hi, cx)
            n += 1
        b = best_row(rows, n, kind)
        tw += rows[b, 1]
        td += rows[b, 2]
        if n < c:
            rows[n, 0] = -1.0
    exact = ESTIMATE if ex_lo == ESTIMATE else ex_hi
    if one:
        return tw, td, exact
    return _keep(state, slot, key, tw / board.faces, td / board.faces, exact)


@inline_kernel
def _keep(state, slot, key, w, d, exact):
    """(w, d, exact), kept in the transposition table's ``slot`` under ``key``."""
    state.tt_key[slot] = key
    state.tt_val[slot, 0] = w
    state.tt_val[slot, 1] = d
    state.tt_val[slot, 2] = exact
    return w, d, exact


@kernel
def decide(depth, deeper, leaves, face, kind, by_diff, board, state):
    """A search player's decision on the position ``state.stack[0]`` and the die of face index
    ``face``: its moves ``depth`` deep, or, where they are a close call (:func:`is_close`),
    ``deeper`` (within ``leaves``: :func:`close_depth`), in ``state.rows[0]``; (the pick's row,
    the depth searched)."""
    root = np.int64(0)  # typed: see search
    search(root, depth, face, kind, board, state)
    n = _count(state.rows[0])
    if deeper > depth and is_close(state.rows[0], n, by_diff, state.params[4]):
        d = close_depth(depth, deeper, leaves, state.stack[0], board)
        if d > depth:
            search(root, d, face, kind, board, state)
            depth = d
    return best_row(state.rows[0], n, kind), depth


@inline_kernel
def close_depth(depth, deeper, leaves, pairs, board):
    """How deep a close call is searched: ``deeper``, or, where ``leaves`` is not 0, the
    deepest depth up to it whose :func:`estimated_leaves` are at most ``leaves`` (``depth``
    where none is). A move's time then stays bounded where the boards are open (the opening's
    close calls 5 deep cost the full game a third of a second), and the position alone decides
    it: the same answer on every machine, whatever was searched before."""
    d = deeper
    if leaves > 0:
        while d > depth and estimated_leaves(d, pairs, board) > leaves:
            d -= 1
    return d


@inline_kernel
def estimated_leaves(depth, pairs, board):
    """About how many lines a decision's search ``depth`` placements deep meets (the die
    known): the mover's open columns, then a die's faces times the open columns of the player
    to move, placement by placement, as open as they are now. A line that fills a board ends
    the game, but a removal can empty a slot again and carry it on: counting to the full depth
    keeps the estimate above what the search meets (crowded boards are cheap because they have
    few open columns, not because their lines end)."""
    c = board.columns
    rows = board.slots // c
    open_m, open_o = 0, 0
    for k in range(c):
        if board.mover_size[pairs[k]] < rows:
            open_m += 1
        if board.opp_size[pairs[k]] < rows:
            open_o += 1
    count = float(max(open_m, 1))
    for k in range(1, depth):
        count *= board.faces * max(1, open_o if k % 2 == 1 else open_m)
    return count


@inline_kernel
def _count(rows):
    """How many moves a decision's rows hold."""
    n = 0
    while n < rows.shape[0] and rows[n, 0] >= 0:
        n += 1
    return n


@kernel
def search_many(positions, depth, kind, board, state, value, choices):
    """:meth:`Searcher.values` of the sorted ``positions``."""
    c = board.columns
    root, chance = np.int64(0), np.int64(-1)  # typed: see search
    for i in range(positions.shape[0]):
        for k in range(c):
            state.stack[0, k] = positions[i, k]
        w, d, x = search(root, depth, chance, kind, board, state)
        value[i, 0], value[i, 1], value[i, 2] = w, d, x
        for m in range(choices.shape[1]):
            for k in range(3):
                choices[i, m, k] = np.nan
        if rules.ended(positions[i], c, board.slots, board.mover_size, board.opp_size):
            continue
        for v in range(board.faces):
            search(root, depth, v, kind, board, state)
            rows = state.rows[0]
            for r in range(_count(rows)):
                j = int(rows[r, 0])
                for k in range(3):
                    choices[i, v * c + j, k] = rows[r, k + 1]
