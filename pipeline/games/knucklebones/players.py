"""Knucklebones players: random, greedy and expectimax search (the Rust solver's evaluation or
ours), each a function of the position (facing pairs from the mover's view), the die and a
random generator (for tie-breaks) to a column. The rules and the search live in this package;
matches between players and the perfect player (which needs the exact tables) are in
:mod:`pipeline.apps.knucklebones.match`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pipeline.games.knucklebones.evaluator import Evaluator, board_name, packaged
from pipeline.games.knucklebones.game import Knucklebones
from pipeline.games.knucklebones.search import NET, NET_SCORE, OURS, SEED, Searcher, greedy_gain

#: A player: (pairs from the mover's view, die face, rng) -> column index.
Player = Callable[[np.ndarray, int, np.random.Generator], int]


def random_player(game: Knucklebones) -> Player:
    """Any column that is not full, uniformly."""

    def play(pairs: np.ndarray, face: int, rng: np.random.Generator) -> int:
        return int(rng.choice(game.legal_columns(pairs)))

    return play


def greedy_player(game: Knucklebones) -> Player:
    """The column with the best immediate change of the score difference (ties at random)."""
    t = game.t

    def play(pairs: np.ndarray, face: int, rng: np.random.Generator) -> int:
        gain = greedy_gain(pairs, face, t.place, t.mover_score, t.opp_score)
        return int(rng.choice(np.flatnonzero(gain == gain.max())))

    return play


def search_player(game: Knucklebones, depth: int, kind: int = OURS, deeper: int = 0) -> Player:
    """Expectimax to ``depth`` plies with our evaluation (``OURS``), the Rust solver's
    (``SEED``) or the board's distilled evaluator (``NET``; ValueError where the board has
    none); close calls ``deeper`` plies deep where that is deeper."""
    evaluator = None
    if kind in (NET, NET_SCORE):
        evaluator = board_evaluator(game)
        if evaluator is None:
            raise ValueError(f"no evaluator for the {board_name(game)} board")
    searcher = Searcher(game, evaluator=evaluator)

    def play(pairs: np.ndarray, face: int, rng: np.random.Generator) -> int:
        return searcher.best_move(pairs, face, depth, kind, deeper)[0]

    return play


def named_player(game: Knucklebones, name: str) -> Player:
    """A player by name: random, greedy, seed-dN (the Rust solver's heuristic), ours-dN or
    net-dN (the distilled evaluator at the leaves), each searching N placements deep, and with
    ``+M`` (``net-d4+6``) its close calls M deep; ValueError for any other name (the commands
    check names first, with their own words)."""
    if name == "random":
        return random_player(game)
    if name == "greedy":
        return greedy_player(game)
    for prefix, kind in (("seed-d", SEED), ("ours-d", OURS), ("net-d", NET)):
        depth, _, deeper = name[len(prefix) :].partition("+")
        if name.startswith(prefix) and all(
            d.isascii() and d.isdigit() for d in (depth, deeper or "0")
        ):
            return search_player(game, int(depth), kind, int(deeper or 0))
    raise ValueError(f"unknown player {name!r}")


def board_evaluator(game: Knucklebones) -> Evaluator | None:
    """The packaged evaluator of ``game``'s board and die (None where there is none)."""
    r = game.r
    return packaged(r.columns, r.rows, r.faces)
