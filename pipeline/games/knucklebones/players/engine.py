"""The one Knucklebones player engine: every named player is one policy, wherever it plays.

A player is a name (:func:`policy`): ``random`` (a move drawn uniformly), ``greedy`` (the best
immediate change of the score difference, :func:`pipeline.games.knucklebones.rules.gain`, ties
drawn uniformly), ``seed-dN`` (the Rust solver's search), ``ours-dN`` (ours) and ``net-dN``
(an evaluator at the leaves), each searching N placements deep and with ``+M`` (``net-d4+6``)
its close calls M deep (:mod:`pipeline.games.knucklebones.players.search`). Its column is a
function of the canonical position, the die and one uniform draw ``u`` in [0, 1) (compiled,
:func:`choose`): a move is a distinct facing pair (two columns holding the same pair are one
move), a draw picks the ``int(u * n)``-th of ``n`` candidates in canonical order, and a search
picks by the one pick (:func:`~pipeline.games.knucklebones.players.search.best_row`). With an
exploration rate ``eps``, a draw below it plays a move drawn uniformly instead.

Every face asks the same function: :class:`Player` from Python (`play`, `serve` and the API
through the answer, `rate`, matches; it draws ``u`` from its generator where the player draws
at all) and :func:`play_games`, the compiled loop that plays many games (labelled sets,
self-play), so a player of a given name picks the same column for the same position, die and
draw everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.errors import UsageError
from pipeline.games.knucklebones import DEEPEST, rules
from pipeline.games.knucklebones.game import Knucklebones, board_name
from pipeline.games.knucklebones.players.search import (
    NET,
    NET_SCORE,
    OURS,
    SEED,
    Searcher,
    compiled,
    decide,
)
from pipeline.solve.compiled import inline_kernel, kernel

#: What a player does at a decision: draw a move, take the greedy gain, or search.
RANDOM, GREEDY, SEARCH = 0, 1, 2
#: The largest leaf bound a player's name takes (``net-d3+5/12000``).
MOST_LEAVES = 10**9
#: The longest game played (placements): removals can prolong a game, rarely by much.
MAX_PLIES = 200
#: A player as Python faces take it: (pairs from the mover's view, die, rng) -> column.
Play = Callable[[np.ndarray, int, np.random.Generator], int]
#: The search kinds by name prefix.
_SEARCHES = (("seed-d", SEED), ("ours-d", OURS), ("net-d", NET))


@dataclass(frozen=True)
class Policy:
    """A named player: what it does, and for a search its leaf kind, depth and close calls'
    depth (0: never deeper)."""

    name: str
    act: int
    kind: int = OURS
    depth: int = 0
    deeper: int = 0
    leaves: int = 0
    """A close call goes deeper only as far as its search meets about this many leaves (0: no
    bound; :func:`~.search.close_depth`)."""

    @property
    def row(self) -> tuple[int, int, int, int, int]:
        """The player as the compiled engine takes it."""
        return (self.act, self.kind, self.depth, self.deeper, self.leaves)

    @property
    def draws(self) -> bool:
        """Whether its column depends on the draw (random, greedy's ties)."""
        return self.act != SEARCH

    @property
    def needs_evaluator(self) -> bool:
        return self.act == SEARCH and self.kind in (NET, NET_SCORE)


def policy(name: str) -> Policy:
    """The player named ``name``; UsageError, in a user's words, for any other name or a depth
    outside 1..:data:`DEEPEST` (close calls deeper than the depth; ``/N``: as far as about
    N leaves, 1 to :data:`MOST_LEAVES`)."""
    if name in ("random", "greedy"):
        return Policy(name, RANDOM if name == "random" else GREEDY)
    for prefix, kind in _SEARCHES:
        rest, slash, leaves = name[len(prefix) :].partition("/")
        depth, plus, deeper = rest.partition("+")
        parts = [depth, deeper] if plus else [depth]
        if (
            name.startswith(prefix)
            and all(d.isascii() and d.isdigit() and len(d) < 4 for d in parts)
            and (not slash or (plus and leaves.isascii() and leaves.isdigit() and len(leaves) < 12))
        ):
            if not all(1 <= int(d) <= DEEPEST for d in parts):
                raise UsageError(f"player {name!r}: the depth must be 1 to {DEEPEST}")
            if plus and int(deeper) <= int(depth):
                raise UsageError(f"player {name!r}: close calls go deeper than {depth}")
            if slash and not 1 <= int(leaves) <= MOST_LEAVES:
                raise UsageError(f"player {name!r}: the leaves must be 1 to {MOST_LEAVES:,}")
            return Policy(name, SEARCH, kind, int(depth), int(deeper or 0), int(leaves or 0))
    raise UsageError(
        f"unknown player {name!r}: use random, greedy, seed-dN, ours-dN, net-dN (net-dN+M: "
        "close calls M deep; net-dN+M/L: as far as L leaves) or perfect"
    )


def board_evaluator(game: Knucklebones) -> Any:
    """The packaged evaluator of ``game``'s board and die (None where there is none)."""
    from pipeline.games.knucklebones.players.artefacts import packaged_evaluator

    r = game.r
    return packaged_evaluator(r.columns, r.rows, r.faces)


class Player:
    """A named player of one board, picked from Python: ``player(pairs, die, rng)`` is its
    column (0-based, in ``pairs``' own order: the first column holding the picked pair)."""

    def __init__(self, game: Knucklebones, name: str, evaluator: Any = None) -> None:
        """``evaluator``: what a ``net`` player reads at its leaves (default: the board's
        packaged one; UsageError where there is none)."""
        self.policy = policy(name)
        if self.policy.needs_evaluator and evaluator is None:
            evaluator = board_evaluator(game)
            if evaluator is None:
                raise UsageError(
                    f"player {name!r}: no evaluator for the {board_name(game.r)} board"
                )
        self.searcher = Searcher(game, evaluator=evaluator)
        self.name = name

    def pick(self, pairs: np.ndarray, die: int, u: float = 0.0, eps: float = 0.0) -> int:
        """The column for ``die`` given the draw ``u`` (and the exploration rate ``eps``)."""
        s = self.searcher
        srt = s.root(pairs, self.policy.kind, max(self.policy.depth, self.policy.deeper))
        args = (die, u, eps, *self.policy.row, s.board, s.state)
        j = compiled(choose, *args)(*args)
        if j < 0:
            raise ValueError("no legal move: the board is full")
        return int(np.flatnonzero(np.asarray(pairs) == srt[j])[0])

    def __call__(self, pairs: np.ndarray, die: int, rng: np.random.Generator) -> int:
        """The column, drawing ``u`` from ``rng`` where the player draws at all."""
        return self.pick(pairs, die, float(rng.random()) if self.policy.draws else 0.0)


@dataclass(frozen=True)
class Games:
    """Games played by :func:`play`: every position met before a roll, in order."""

    pairs: np.ndarray
    """[n, columns] the sorted facing pairs of each position (the mover's view)."""
    ply: np.ndarray
    """Placements before the position in its game."""
    game: np.ndarray
    """The game each position is met in."""
    result: np.ndarray
    """Per game: the final score difference of the player who moved first (NaN: cut at
    :data:`MAX_PLIES`)."""


def play(
    game: Knucklebones,
    players: Sequence[str],
    games: int,
    seed: int,
    eps: float = 0.0,
    evaluator: Any = None,
) -> Games:
    """``games`` games between ``players`` (each game's two drawn at random, the first moving
    first), in compiled code: the seats, the dice and the draws from one generator seeded with
    ``seed`` (:func:`play_drawn`)."""
    rng = np.random.default_rng(seed)
    seats = rng.integers(0, len(players), size=(games, 2))
    dice = rng.integers(1, game.r.faces + 1, size=(games, MAX_PLIES))
    uniforms = rng.random((games, MAX_PLIES))
    return play_drawn(game, players, seats, dice, uniforms, eps, evaluator)


def play_drawn(
    game: Knucklebones,
    players: Sequence[str],
    seats: np.ndarray,
    dice: np.ndarray,
    uniforms: np.ndarray,
    eps: float = 0.0,
    evaluator: Any = None,
) -> Games:
    """Games between ``players`` in compiled code: game ``g`` between ``players[seats[g, 0]]``
    (moving first) and ``players[seats[g, 1]]``, its placement ``k`` with the die
    ``dice[g, k]`` and the draw ``uniforms[g, k]`` (a game stops at the arrays' width);
    ``eps``: the exploration rate of every move; ``evaluator``: what the ``net`` players read
    (any object with a ``packed``; default: the board's packaged one)."""
    if not 0.0 <= eps < 1.0:
        raise ValueError(f"the exploration rate must be in [0, 1), not {eps}")
    made = [policy(name) for name in players]
    if evaluator is None and any(p.needs_evaluator for p in made):
        evaluator = board_evaluator(game)
    s = Searcher(game, tt_bits=18, evaluator=evaluator)
    for p in made:
        s.check(p.kind, max(p.depth, p.deeper))
    n_games = seats.shape[0]
    cap = n_games * 4 * game.r.slots + 16
    out = Games(
        np.empty((cap, game.r.columns), dtype=np.int64), np.empty(cap, dtype=np.int64),
        np.empty(cap, dtype=np.int64), np.full(n_games, np.nan),
    )  # fmt: skip
    args = (
        np.array([p.row for p in made], dtype=np.int64),
        np.ascontiguousarray(seats, dtype=np.int64), np.ascontiguousarray(dice, dtype=np.int64),
        np.ascontiguousarray(uniforms, dtype=np.float64), float(eps), s.board, s.state,
        out.pairs, out.ply, out.game, out.result,
    )  # fmt: skip
    n = compiled(play_games, *args)(*args)
    return Games(out.pairs[:n], out.ply[:n], out.game[:n], out.result)


# -- the kernels ---------------------------------------------------------------------------


@kernel
def _drawn(pairs, v, u, board, greedy):
    """The ``int(u * n)``-th of the ``n`` candidate moves of face index ``v`` (every move, or
    with ``greedy`` those of the best gain), in canonical order; -1 when there is none."""
    best, n = rules.NO_GAIN, 0
    for j in range(board.columns):
        g = _worth(pairs, j, v, board, greedy)
        if g > best:
            best, n = g, 1
        elif g == best and g > rules.NO_GAIN:
            n += 1
    k = min(int(u * n), n - 1)
    for j in range(board.columns):
        if best > rules.NO_GAIN and _worth(pairs, j, v, board, greedy) == best:
            if k == 0:
                return j
            k -= 1
    return -1


@inline_kernel
def _worth(pairs, j, v, board, greedy):
    """What a draw ranks column ``j``'s move by (face index ``v``): its gain with ``greedy``,
    else 0; :data:`rules.NO_GAIN` where it is no move (a full column, or one holding the pair
    of the column before it: that column's move)."""
    if rules.move_pair(pairs[j], pairs[max(j - 1, 0)], j, v, board.moved) < 0:
        return rules.NO_GAIN
    return rules.gain(pairs[j], v, board.moved, board.mover_score, board.opp_score) if greedy else 0


@kernel
def choose(die, u, eps, act, kind, depth, deeper, leaves, board, state):
    """A player's move (its place in the sorted position ``state.stack[0]``) for ``die`` and
    the draw ``u``; a draw below ``eps`` plays a move drawn uniformly (the draw rescaled)."""
    pairs = state.stack[0]
    if u < eps:
        act, u = RANDOM, u / eps  # (act stays an int64: one compiled _drawn)
    elif eps > 0.0:
        u = (u - eps) / (1.0 - eps)
    if act != SEARCH:
        return _drawn(pairs, die - 1, u, board, act == GREEDY)
    by_diff = kind in (SEED, NET_SCORE)
    best, _ = decide(depth, deeper, leaves, die - 1, kind, by_diff, board, state)
    return int(state.rows[0, best, 0]) if best >= 0 else -1


@kernel
def play_games(policies, seats, dice, uniforms, eps, board, state, out_pairs, out_ply, out_game,
               result):  # fmt: skip
    """Play every game (``seats[g]``: its two players' rows of ``policies``, the first moving
    first) with its row of ``dice`` and ``uniforms``; write every position met before a roll
    (sorted pairs), its ply and game, and each game's result; return how many positions."""
    c = board.columns
    n = 0
    here = state.stack[0]
    for g in range(seats.shape[0]):
        for k in range(c):
            here[k] = 0  # both boards empty: pair 0 everywhere
        for ply in range(dice.shape[1]):
            if rules.ended(here, c, board.slots, board.mover_size, board.opp_size):
                diff = rules.score_diff(here, c, board.mover_score, board.opp_score)
                result[g] = diff if ply % 2 == 0 else -diff
                break
            if n >= out_pairs.shape[0]:
                break
            for k in range(c):
                out_pairs[n, k] = here[k]
            out_ply[n] = ply
            out_game[n] = g
            n += 1
            die = dice[g, ply]
            p = policies[seats[g, ply % 2]]
            j = choose(die, uniforms[g, ply], eps, p[0], p[1], p[2], p[3], p[4], board, state)
            after = state.turned[0]
            for k in range(c):
                after[k] = board.swap[here[k]]
            rules.turned_after(after, c, j, board.moved[here[j], die - 1], state.stack[1])
            for k in range(c):
                here[k] = state.stack[1, k]
    return n
