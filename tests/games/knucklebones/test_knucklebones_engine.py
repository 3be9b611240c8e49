"""The one player engine (issue 46): every named player picks the same column for the same
position, die and draw wherever it plays -- the compiled loop that plays many games (labelled
sets, self-play), the Python face (`rate`, matches, the decisions table) and the one answer
(`solve`, `serve`, the API) -- and the player that is rated is the answer that is shown.

Rules: seed 004_4436d6a68a1265db.txt and seeds/README.md (Cult of the Lamb).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

import pipeline
from pipeline.answer.answers import for_dir
from pipeline.errors import UsageError
from pipeline.games.knucklebones.exact.cpu import pairs_of, successor_ids
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.games.knucklebones.players import artefacts, engine, positions
from pipeline.games.knucklebones.players.names import player_name
from pipeline.games.knucklebones.players.search import (
    NET,
    OURS,
    SEED,
    Searcher,
    close_depth,
    estimated_leaves,
)
from pipeline.games.knucklebones.players.training import Settings, fit
from pipeline.games.registry import get_variant
from tests.support.knucklebones_exact import lookups

SMALL = KnuckleRules(2, 2, 3)
#: One player of every kind, the evaluator's with its close calls deeper.
NAMES = ("random", "greedy", "seed-d2", "ours-d1", "ours-d3", "net-d2", "net-d1+3", "net-d1+4/300")


@cache
def small_evaluator() -> object:
    game = Knucklebones(SMALL)
    found = positions.labelled_set(game, lookups(SMALL), 200, 200, 3)
    return fit(game, found, Settings(embed=8, phi=8, hidden=(8, 4), epochs=2, batch=64, seed=2))


def drawn(game: Knucklebones, games: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    seats = rng.integers(0, len(NAMES), size=(games, 2))
    dice = rng.integers(1, game.r.faces + 1, size=(games, engine.MAX_PLIES))
    return seats, dice, rng.random((games, engine.MAX_PLIES))


@pytest.mark.parametrize("eps", [0.0, 0.3])
def test_the_compiled_games_are_the_python_players_moves(eps: float) -> None:
    """Every move of games played in compiled code (each player against each, with and without
    exploration) is the Python face's column for that position, die and draw."""
    game = Knucklebones(SMALL)
    ev = small_evaluator()
    seats, dice, uniforms = drawn(game, 60, 4)
    played = engine.play_drawn(game, NAMES, seats, dice, uniforms, eps, ev)
    players = [engine.Player(game, name, ev) for name in NAMES]
    assert len(played.pairs) > 300 and set(seats.ravel()) == set(range(len(NAMES)))
    for k in range(len(played.pairs) - 1):
        g, ply = int(played.game[k]), int(played.ply[k])
        if played.game[k + 1] != g:
            continue  # the game ended: no position after this one
        pairs, die = played.pairs[k], int(dice[g, ply])
        column = players[seats[g, ply % 2]].pick(pairs, die, float(uniforms[g, ply]), eps)
        after = game.canonical(game.play(pairs, column, die)[None, :])[0]
        assert after == game.state_of(played.pairs[k + 1]), (NAMES[seats[g, ply % 2]], k)
    finished = ~np.isnan(played.result)
    assert finished.all() and np.isin(np.sign(played.result), (-1, 0, 1)).all()


def test_a_draw_picks_among_moves_and_equal_columns_are_one_move() -> None:
    """random draws among the distinct moves (two columns holding the same pair are one), in
    canonical order, whatever order the columns come in; greedy among the moves of the best
    gain."""
    game = Knucklebones(KnuckleRules(3, 3, 6))
    empty = np.zeros(3, dtype=np.int64)
    random = engine.Player(game, "random")
    assert {random.pick(empty, 4, u) for u in np.linspace(0, 0.999, 7)} == {0}
    one = game.play(game.play(empty, 0, 5), 1, 2)  # a 5 facing them, a 2 of ours
    found = {game.state_of(game.play(one, random.pick(one, 3, u), 3)) for u in (0.1, 0.5, 0.9)}
    assert len(found) == 3  # three distinct moves, one third of the draws each
    again = one[::-1].copy()  # the same position, its columns in another order
    for u in (0.1, 0.5, 0.9):
        a, b = random.pick(one, 3, u), random.pick(again, 3, u)
        assert game.state_of(game.play(one, a, 3)) == game.state_of(game.play(again, b, 3))


def test_the_rated_player_is_the_answer_shown(tmp_path: Path) -> None:
    """The board's default player (net-d4+6 on 3x3-d4), as `rate` plays it, picks the column the
    one answer shows (`solve`, `serve`, the API), on held-out positions past the opening book,
    ties included: the search's ties among columns go to the same column both ways."""
    variant = get_variant("knucklebones-3x3-d4")
    answers = for_dir(tmp_path)
    rules = answers.board_rules(variant)
    name = player_name("net", rules.default_depth, rules.deeper, rules.leaves)
    player = engine.Player(rules.game, name)
    held = artefacts.read_labelled(artefacts.MODELS / "3x3-d4-labelled.parquet")
    positions = pairs_of(rules.game.r, held.state_id[held.dice >= 7][:40])
    shown = 0
    for k, pairs in enumerate(positions):
        die = 1 + k % rules.faces
        position = rules.position_of(pairs[::-1].copy())  # the user's column order
        found = answers.board(variant, position, die, built=False)
        if found.source != "search" or found.player != name:
            continue
        assert found.best is not None
        assert player.pick(position.pairs, die) == found.best.column - 1, (pairs, die)
        if shown < 3:  # the API asks the same answer
            api = pipeline.board(variant.name, rules.text(position), die, data_dir=tmp_path)
            assert api.best is not None and api.best.column == found.best.column
        shown += 1
    assert shown >= 20


def test_search_ties_go_to_the_other_objective_then_the_first_column() -> None:
    """The one pick (pipeline.solve.tolerance.pick_two): a search's columns tied in win chance
    are told apart by the score difference, and columns tied in both go to the first in the
    position's canonical order (the emptiest facing pair), as the players always picked."""
    game = Knucklebones(KnuckleRules(3, 3, 4))
    s = Searcher(game)
    pairs = np.array([43, 133, 369])  # two columns with the same values at depth 3
    depth, moves, best = s.decide(pairs, 2, 3, OURS)
    assert depth == 3 and len(moves) == 2
    assert moves[0][1] == moves[1][1] and best == 0 and moves[best][0] == 0
    for kind in (OURS, SEED):
        for die in range(1, 5):
            _, moves, best = s.decide(pairs, die, 2, kind)
            key = (lambda e: (e.win, e.diff)) if kind == OURS else (lambda e: (e.diff, e.win))
            top = max(key(e) for _, e in moves)
            tied = [j for j, e in moves if key(e) == top]
            assert moves[best][0] == min(tied)


def test_a_batch_search_gives_each_position_and_choice() -> None:
    """Searcher.values: each position's value and each (die, column) choice's, as the one
    position search and its moves give them (what a fit to searched values reads)."""
    game = Knucklebones(SMALL)
    s = Searcher(game, evaluator=small_evaluator())
    ids = np.arange(0, game.n_states, 5)
    pos = pairs_of(SMALL, ids)
    value, choices = s.values(pos, 2, NET)
    assert value.shape == (len(ids), 3) and choices.shape == (len(ids), 6, 3)
    check = Searcher(game, evaluator=small_evaluator())
    over = game.terminal_mask(pos)
    for i in range(0, len(ids), 7):
        ev = check.evaluate(pos[i], 2, NET)
        assert (value[i, 0], value[i, 1]) == (ev.win, ev.diff)
        if over[i]:
            assert np.isnan(choices[i]).all()
            continue
        for die in range(1, 4):
            for j, e in check.move_values(pos[i], die, 2, NET):
                assert tuple(choices[i, (die - 1) * 2 + j, :2]) == (e.win, e.diff)
    legal = successor_ids(SMALL, ids) >= 0  # a choice has a value exactly where it is a move
    assert np.array_equal(~np.isnan(choices[~over, :, 0]), legal[~over])


def test_a_player_by_name_and_its_refusals() -> None:
    assert engine.policy("net-d4+6").row == (engine.SEARCH, NET, 4, 6, 0)
    assert engine.policy("net-d3+5/12000").row == (engine.SEARCH, NET, 3, 5, 12000)
    assert engine.policy("seed-d2").row == (engine.SEARCH, SEED, 2, 0, 0)
    assert engine.policy("greedy").draws and not engine.policy("ours-d1").draws
    for bad, words in (("net-d4+3", "deeper than 4"), ("ours-d9", "1 to 8"),
                       ("wizard", "unknown player"), ("net-d3/100", "unknown player"),
                       ("net-d3+5/0", "leaves must be"), ("net-d3+5/", "unknown player"),
                       ("net-d3+5/1e4", "unknown player")):  # fmt: skip
        with pytest.raises(UsageError, match=words):
            engine.policy(bad)
    with pytest.raises(UsageError, match="no evaluator"):
        engine.Player(Knucklebones(KnuckleRules(2, 3, 6)), "net-d2")
    with pytest.raises(ValueError, match="exploration"):
        engine.play(Knucklebones(SMALL), ["random"], 2, 1, eps=1.0)


def test_a_close_call_goes_deeper_only_as_far_as_its_leaves() -> None:
    """``net-dN+M/L``: a close call searched M deep where that search meets about L leaves or
    fewer, else as deep as fits (N at least); the bound is the position's alone, so the same
    position gets the same column after any history, and a bound no search reaches plays as
    ``net-dN+M``, one no deeper search fits as ``net-dN``."""
    game = Knucklebones(SMALL)
    s = Searcher(game)
    board = s.board
    start = np.zeros(game.r.columns, dtype=np.int64)
    # the opening: the mover's open columns, then a die's faces times the open columns
    c, f = game.r.columns, game.r.faces
    assert estimated_leaves.py_func(1, start, board) == c
    assert estimated_leaves.py_func(3, start, board) == c * (f * c) ** 2
    deep = estimated_leaves.py_func(4, start, board)
    assert close_depth.py_func(2, 4, 0, start, board) == 4  # no bound
    assert close_depth.py_func(2, 4, int(deep), start, board) == 4
    assert close_depth.py_func(2, 4, int(deep) - 1, start, board) == 3
    assert close_depth.py_func(2, 4, 1, start, board) == 2
    ev = small_evaluator()
    rng = np.random.default_rng(3)
    played = engine.play(game, ["ours-d2"], 30, 5)
    names = ("net-d1", "net-d1+3", "net-d1+3/1", f"net-d1+3/{10**9}", "net-d1+3/30")
    players = {n: engine.Player(game, n, ev) for n in names}
    bound = 0
    for k in rng.permutation(len(played.pairs))[:150]:
        pairs, die = played.pairs[k], int(rng.integers(1, f + 1))
        if game.finished(pairs):
            continue
        pick = {n: p.pick(pairs, die) for n, p in players.items()}
        assert pick["net-d1+3/1"] == pick["net-d1"]
        assert pick[f"net-d1+3/{10**9}"] == pick["net-d1+3"]
        # one position, one column: a searcher that met nothing before picks the same
        assert engine.Player(game, "net-d1+3/30", ev).pick(pairs, die) == pick["net-d1+3/30"]
        bound += close_depth.py_func(1, 3, 30, np.sort(pairs), board) < 3
    assert bound > 10  # the bound of 30 leaves holds some of these close calls shallower
