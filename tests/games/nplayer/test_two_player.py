"""The two-player game (seed 002_966add8e0a53f14d.txt): rules, graph, values, state parsing."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import UsageError
from pipeline.games.nplayer.game import NPlayer as TwoPlayer
from pipeline.games.nplayer.game import ranges_text
from pipeline.games.nplayer.rules import NPlayerRules as TwoPlayerRules
from pipeline.graph import PASS
from pipeline.solve.exact import solve_exact
from pipeline.solve.rank_order import best_moves, solve_rank_order
from tests.support.graphs import check_graph
from tests.support.two_player_reference import reference_solver

SEED = "002_966add8e0a53f14d.txt"

# Seed 002, verifier sample lines (full precision): (tiles, P1 score or None, value).
SEED_VERIFIER_LINES = [
    ("1", 1, 0.5833333333333333),
    ("2", 1, 0.16666666666666666),
    ("2", 2, 0.5833333333333333),
    ("3", 1, 0.16666666666666666),
    ("3", 2, 0.16666666666666666),
    ("23456789", None, 0.3476896905946085),
    ("123456789", None, 0.5028103544024047),
]
# Seed 002, examples of `ShutTheBox --one/--two --expect` (printed with 6 decimals).
SEED_EXPECT = [
    ("123456789", None, 0.502810),
    ("146789", None, 0.256254),
    ("123456789", 8, 0.381212),
    ("12345689", 41, 1.000000),
    ("13456789", 43, 0.986111),
]
# Seed 002, examples of `ShutTheBox --one/--two --move`: (tiles, P1 score, roll, move).
SEED_MOVES = [("146789", None, 9, [9]), ("13456789", 17, 12, [3, 9])]


@pytest.fixture(scope="module")
def solved() -> tuple[TwoPlayer, object, object]:
    game = TwoPlayer()
    g = game.graph()
    return game, g, solve_rank_order(g)


def value_of(solved, tiles: str, p1_score: int | None) -> float:
    game, g, sol = solved
    sid = game.parse_state(tiles, p1_score=p1_score)
    return float(sol.value[np.searchsorted(g.state_id, sid)])


@pytest.mark.parametrize(("tiles", "p1_score", "value"), SEED_VERIFIER_LINES)
def test_seed_002_verifier_sample_values(solved, tiles, p1_score, value) -> None:
    """Seed 002_966add8e0a53f14d.txt's verifier sample, to 1e-12."""
    assert value_of(solved, tiles, p1_score) == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize(("tiles", "p1_score", "value"), SEED_EXPECT)
def test_seed_002_expect_examples(solved, tiles, p1_score, value) -> None:
    """Seed 002_966add8e0a53f14d.txt's --expect examples, to the 6 digits printed."""
    assert value_of(solved, tiles, p1_score) == pytest.approx(value, abs=5e-7)


@pytest.mark.parametrize(("tiles", "p1_score", "roll", "move"), SEED_MOVES)
def test_seed_002_move_examples(solved, tiles, p1_score, roll, move) -> None:
    """Seed 002_966add8e0a53f14d.txt's --move examples, from the solved graph."""
    game, g, sol = solved
    best, _ = best_moves(g, sol)
    state = np.searchsorted(g.state_id, game.parse_state(tiles, p1_score=p1_score))
    node = np.flatnonzero((g.node_state == state) & (g.node_roll == roll))[0]
    label = int(g.mv_label[best[node]])
    assert game.describe_moves(np.array([label]))[0].to_list() == move


def test_graph_is_valid_and_ranks_go_down(solved) -> None:
    game, g, _ = solved
    check_graph(g)
    src = g.node_state[g.mv_node]
    has_dst = g.mv_dst >= 0
    assert np.all(g.rank[g.mv_dst[has_dst]] < g.rank[src[has_dst]])
    # every P1 pass lands on P2's full box against the passing state's open sum
    mask, score = game.split_ids(g.state_id)
    p1_pass = (g.mv_label < 0) & (score[src] == 0)
    dst = g.mv_dst[p1_pass]
    assert np.all(mask[dst] == game.full)
    assert np.array_equal(score[dst], game.base.open_sums(mask[src[p1_pass]]))
    assert np.all(g.mv_scale[p1_pass] == -1) and np.all(g.mv_offset[p1_pass] == 1)


def test_state_counts_and_possible_scores() -> None:
    game = TwoPlayer()
    g = game.graph()
    # P1 can end a turn with any score 1..43 (44 and 45 always have a move), from any position
    # and equally from the full box; one block of 512 masks for P1 and for each score.
    assert game.possible_scores.tolist() == list(range(1, 44))
    assert scores_from_start(game).tolist() == list(range(1, 44))
    assert g.n_states == 512 * 44
    mask, score = game.split_ids(g.state_id)
    sums = game.base.open_sums(mask)
    terminal = ~np.isnan(g.terminal)
    assert np.array_equal(terminal, np.where(score == 0, mask == 0, sums < score))
    assert np.all(g.terminal[terminal] == 1.0)


def test_values_match_an_independent_solver_on_the_seed_rules(solved) -> None:
    """A plain recursive solver of the rules agrees on every state, to 1e-12."""
    game, g, sol = solved
    p1, p2 = reference_solver()
    mask, score = game.split_ids(g.state_id)
    ref = [
        p1(m) if s == 0 else p2(m, s) for m, s in zip(mask.tolist(), score.tolist(), strict=True)
    ]
    np.testing.assert_allclose(sol.value, np.array(ref, dtype=float), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "rules",
    [
        TwoPlayerRules.make(tiles=4, sides=3, one_die_sum=3),
        TwoPlayerRules.make(tiles=5, dice=2, sides=2, one_die_sum=0),
        TwoPlayerRules.make(tiles=3, dice=1, sides=4, one_die_sum=2),
        TwoPlayerRules.make(tiles=6, dice=3, sides=2, one_die_sum=4),
    ],
)
def test_small_games_exact_against_independent_solver(rules: TwoPlayerRules) -> None:
    """On small rule sets the exact solver, the float solver and the reference agree exactly."""
    game = TwoPlayer(rules)
    g = game.graph()
    check_graph(g)
    exact = solve_exact(g)
    floats = solve_rank_order(g).value
    box = rules.box
    p1, p2 = reference_solver(box.tiles, box.dice, box.sides, box.one_die_sum or 0, exact=True)
    mask, score = game.split_ids(g.state_id)
    for i, (m, s) in enumerate(zip(mask.tolist(), score.tolist(), strict=True)):
        ref = p1(m) if s == 0 else p2(m, s)
        assert exact[i] == ref, (m, s)
        assert floats[i] == pytest.approx(float(ref), abs=1e-12)
    # values are probabilities of winning, tie = 1/2: always within [0, 1]
    assert all(Fraction(0) <= v <= 1 for v in exact)


def test_possible_scores_may_exceed_those_from_the_full_box() -> None:
    """With 4 tiles and 2d6 only a stuck P1 position never reached from the full box scores 9."""
    game = TwoPlayer(TwoPlayerRules.make(tiles=4))
    assert 9 in game.possible_scores.tolist()
    assert 9 not in scores_from_start(game).tolist()
    assert game.parse_state("234", p1_score=9) == 9 * 16 + 0b1110


def test_describe_states_columns() -> None:
    game = TwoPlayer()
    ids = np.array([511, 8 * 512 + 511, 43 * 512 + 0b111111101, 0], dtype=np.int64)
    frame = game.describe_states(ids)
    assert frame["tiles"].to_list() == ["123456789", "123456789", "13456789", ""]
    assert frame["player"].to_list() == [1, 2, 2, 1]
    assert frame["p1_score"].to_list() == [None, 8, 43, None]
    assert frame["open_sum"].to_list() == [45, 45, 43, 0]
    assert frame["n_open"].to_list() == [9, 9, 8, 0]
    assert frame["open_tiles"][2].to_list() == [1, 3, 4, 5, 6, 7, 8, 9]


def test_parse_state() -> None:
    game = TwoPlayer()
    assert game.parse_state("123456789") == 511
    assert game.parse_state("123456789", p1_score=8) == 8 * 512 + 511
    assert game.parse_state("1,3", p1_score=43) == 43 * 512 + 0b101


@pytest.mark.parametrize(
    ("tiles", "p1_score", "message"),
    [
        ("123", 0, "must be positive"),
        ("123", -4, "must be positive"),
        ("123", 44, "cannot finish a turn with score 44; possible scores: 1..43"),
        ("123", 45, "cannot finish a turn with score 45"),
        ("", None, "no open tiles"),
        ("1230", None, "tile 0 is not in this box"),
        ("1a", 3, "'a' is not a tile number"),
        ("11", None, "listed twice"),
    ],
)
def test_parse_state_rejects(tiles: str, p1_score: int | None, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        TwoPlayer().parse_state(tiles, p1_score=p1_score)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tiles": 13}, "between 1 and 12"),
        ({"tiles": 0}, "between 1 and 12"),
        ({"sides": 1}, "sides must be between 2"),
        ({"dice": 0}, "dice must be between 1"),
        ({"one_die_sum": -1}, "0 or more"),
    ],
)
def test_rules_reject_out_of_range(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        TwoPlayerRules.make(**kwargs)


def test_ranges_text() -> None:
    assert ranges_text([1, 2, 3, 5, 7, 8]) == "1..3, 5, 7..8"
    assert ranges_text([]) == ""


@settings(max_examples=25, deadline=None)
@given(
    tiles=st.integers(1, 5),
    dice=st.integers(1, 3),
    sides=st.integers(2, 4),
    one_die_sum=st.integers(0, 8),
)
def test_random_small_rules_against_independent_solver(
    tiles: int, dice: int, sides: int, one_die_sum: int
) -> None:
    """Any small rule set: the graph is valid and the float solver matches the reference."""
    game = TwoPlayer(
        TwoPlayerRules.make(tiles=tiles, dice=dice, sides=sides, one_die_sum=one_die_sum)
    )
    g = game.graph()
    check_graph(g)
    values = solve_rank_order(g).value
    p1, p2 = reference_solver(tiles, dice, sides, one_die_sum)
    mask, score = game.split_ids(g.state_id)
    ref = [
        p1(m) if s == 0 else p2(m, s) for m, s in zip(mask.tolist(), score.tolist(), strict=True)
    ]
    np.testing.assert_allclose(values, ref, rtol=0, atol=1e-12)
    # P2 blocks exist exactly for the scores some P1 position can be stuck at
    assert sorted(set(score.tolist()) - {0}) == game.possible_scores.tolist()


def scores_from_start(game: TwoPlayer) -> np.ndarray:
    """Sorted scores reachable from the full box (for comparison with possible_scores)."""
    b = game.one_player_graph
    reach = np.zeros(game.n_masks, dtype=bool)
    reach[game.full] = True
    src = b.node_state[b.mv_node]
    count = np.bitwise_count(src.astype(np.uint64))
    real = b.mv_label != PASS
    for layer in range(game.r.box.tiles, 0, -1):  # moves only go to fewer open tiles
        hit = real & (count == layer) & reach[src]
        reach[b.mv_dst[hit]] = True
    stuck = b.node_state[b.mv_node[~real]]
    stuck = stuck[reach[stuck] & (stuck != 0)]
    return np.unique(game.mask_scores[stuck])
