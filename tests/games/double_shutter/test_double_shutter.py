"""Double Shutter: seed 001's published numbers, the rules, and the tables built from them.

Published numbers come from seed `001_ad09a03ebddbc804.txt` ("Double Shutter: Shut the Super
Box"), which prints them to three decimals; the layout that reproduces them is in
`seeds/README.md`. The one-row cross-checks use `PUBLISHED.md` (Durango Bill's exact fractions).
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.analysis.sql import run_query
from pipeline.errors import UsageError
from pipeline.games.double_shutter.game import DoubleShutter, DoubleShutterRules
from pipeline.games.shutbox.game import RuleSet, ShutTheBox
from pipeline.graph import Graph
from pipeline.solve.exact import solve_exact
from pipeline.solve.rank_order import Solution, solve_rank_order
from pipeline.store import tables

SEED_001 = "001_ad09a03ebddbc804.txt"
START = "000000000"


@cache
def solved(**rules: object) -> tuple[DoubleShutter, Graph, Solution]:
    """A Double Shutter box solved once per rule set for the whole module."""
    game = DoubleShutter(DoubleShutterRules(**rules))  # type: ignore[arg-type]
    g = game.graph()
    return game, g, solve_rank_order(g)


def start_value(**rules: object) -> float:
    game, g, sol = solved(**rules)
    return float(sol.value[np.flatnonzero(g.state_id == game.start_state())[0]])


def node_moves(game: DoubleShutter, g: Graph, state: str, roll: int) -> list[list[int] | None]:
    """The described moves of one (state, roll) node of the graph."""
    sid = game.parse_state(state)
    idx = np.flatnonzero(g.state_id == sid)[0]
    node = np.flatnonzero((g.node_state == idx) & (g.node_roll == roll))
    if node.shape[0] == 0:
        return []
    rows = np.flatnonzero(g.mv_node == node[0])
    return game.describe_moves(g.mv_label[rows]).to_list()


# -- seed 001's numbers ----------------------------------------------------------------------


def test_seed_001_minimum_expected_score() -> None:
    # seed 001_ad09a03ebddbc804.txt: "the expected value for the game (playing optimally) is 19.427"
    assert abs(start_value() - 19.427) < 5e-4


def test_seed_001_probability_of_not_scoring_zero() -> None:
    # seed 001_ad09a03ebddbc804.txt: "the probability for not getting a score of 0 ... is 0.923"
    assert abs((1 - start_value(objective="shut")) - 0.923) < 5e-4


def test_other_layouts_do_not_reproduce_seed_001() -> None:
    # seeds/README.md: only the reversed back row reproduces 19.427 (seed 001_ad09a03ebddbc804.txt)
    assert abs(start_value(back_reversed=False) - 19.427) > 0.1


def test_exact_fractions_agree_with_the_float_solver_on_small_boxes() -> None:
    for columns in (3, 4, 5):
        for objective in ("score", "shut"):
            _, g, sol = solved(columns=columns, objective=objective)
            exact = solve_exact(g)
            diff = np.abs(np.array([float(v) for v in exact]) - sol.value)
            assert diff.max() <= 1e-12 * max(1.0, float(np.abs(sol.value).max()))
            assert all(isinstance(v, Fraction) for v in exact)


# -- one row of tiles is classic Shut the Box ------------------------------------------------


@pytest.mark.parametrize(
    ("one_die", "objective", "classic", "published"),
    [
        # PUBLISHED.md: 1d<=6, max P(shut) = 956177159/9795520512 (Durango Bill)
        ("optional", "shut", RuleSet(one_die="optional", one_die_sum=6), (956177159, 9795520512)),
        # PUBLISHED.md: always two dice, max P(shut) = 7.143 % (seed 000); 466473281/6530347008
        ("never", "shut", RuleSet(), (466473281, 6530347008)),
        ("never", "score", RuleSet(objective="score"), None),
    ],
)
def test_one_row_box_reproduces_classic_shut_the_box(
    one_die: str, objective: str, classic: RuleSet, published: tuple[int, int] | None
) -> None:
    game, g, sol = solved(back_row=False, front_weight=1, one_die=one_die, objective=objective)
    other = ShutTheBox(classic)
    other_graph = other.graph()
    ref = np.empty(other_graph.n_states)
    ref[other_graph.state_id] = solve_rank_order(other_graph).value  # by state id (bitmask)
    # the same open tiles: bit t-1 of the classic id for each standing front tile t
    digits = game.digits(g.state_id)
    mask = ((digits == 0) * (1 << np.arange(9))).sum(axis=1)
    assert g.n_states == 512
    assert np.abs(sol.value - ref[mask]).max() <= 1e-12 * max(1.0, float(np.abs(ref).max()))
    if published is not None:
        num, den = published
        assert abs(sol.value[0] - num / den) <= 1e-12


# -- rules -----------------------------------------------------------------------------------


def test_front_tile_and_the_back_tile_behind_it_are_one_move() -> None:
    # seed 001: "If the player rolls 10, he can shut the left-most 1 tile and then shut the 9 tile
    # behind it and this counts as a valid move."
    game, g, _ = solved()
    moves = node_moves(game, g, START, 10)
    assert [1, -9] in moves
    front_only = [[1, 9], [2, 8], [3, 7], [4, 6], [1, 2, 7], [1, 3, 6], [1, 4, 5], [2, 3, 5]]
    columns = [[c, -(10 - c)] for c in range(1, 10)]
    expected = [*front_only, [1, 2, 3, 4], *columns]
    assert sorted(map(tuple, moves)) == sorted(map(tuple, expected))


def test_back_tile_is_not_shuttable_while_its_front_tile_stands() -> None:
    game, g, _ = solved()
    # From the full box, no move shuts a back tile without its front tile.
    start_moves = [m for roll in range(2, 13) for m in node_moves(game, g, START, roll)]
    for move in start_moves:
        assert move is not None
        for back in (-t for t in move if t < 0):
            assert 10 - back in move
    # Once front 1 is down, the back 9 behind it goes alone on a 9.
    assert [-9] in node_moves(game, g, "100000000", 9)
    assert [-9] not in node_moves(game, g, START, 9)
    # Only the back 1 is left: a single die's 1 shuts it.
    assert node_moves(game, g, "front=- back=1", 1) == [[-1]]


def test_one_die_is_allowed_when_the_shuttable_tiles_sum_to_six_or_less() -> None:
    game = DoubleShutter(DoubleShutterRules())
    ids = np.array(
        [game.parse_state(s) for s in (START, "front=1 back=9", "front=- back=7", "front=- back=6")]
    )
    one = game.dice_available(ids)[1]
    # front 1 with the 9 behind it: only the 1 can be shut now, so one die is allowed
    assert one.tolist() == [False, True, False, True]
    assert game.exposed_sums(ids).tolist() == [45, 1, 7, 6]
    assert game.dice_available(ids)[2].all()


def test_score_counts_front_tiles_twice() -> None:
    game = DoubleShutter(DoubleShutterRules())
    ids = np.array([game.parse_state(s) for s in (START, "front=1 back=9", "front=- back=37")])
    assert game.scores(ids).tolist() == [2 * 45 + 45, 2 * 1 + 9, 10]


def test_states_and_moves_are_counted_by_the_rules() -> None:
    game, g, _ = solved()
    assert g.n_states == 3**9
    assert (g.rank == 18 - game.digits(g.state_id).sum(axis=1)).all()
    # every move leads to a state with fewer tiles standing
    moved = g.mv_dst >= 0
    assert (g.rank[g.mv_dst[moved]] < g.rank[g.node_state[g.mv_node[moved]]]).all()


# -- state ids and parsing -------------------------------------------------------------------


def test_state_id_is_the_state_string_in_base_3() -> None:
    game, g, _ = solved()
    states = game.describe_states(g.state_id)
    ids = [int(s, 3) for s in states["state"].to_list()]
    assert ids == g.state_id.tolist()
    assert states["state"][0] == START and states["tiles"][0] == "front=123456789 back=123456789"
    assert states["tiles"][-1] == "" and states["state"][-1] == "222222222"


def test_tiles_text_round_trips_through_parse_state() -> None:
    game, g, _ = solved()
    states = game.describe_states(g.state_id)
    for sid, text, state in states.select("tiles", "state").with_row_index().iter_rows():
        want = int(g.state_id[sid])
        assert game.parse_state(state) == want
        if text:
            assert game.parse_state(text) == want


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("front=123456789 back=123456789", START),
        ("back=6789, front=1234", "000022222"),
        ("F=- B=-", "222222222"),
        ("front=2 back=8", "202222222"),
        ("front=23 back=1789", "100222221"),
    ],
)
def test_front_back_form(text: str, state: str) -> None:
    game = DoubleShutter(DoubleShutterRules())
    assert game.parse_state(text) == int(state, 3)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "123",
        "123456789",
        "0000000003",
        "front=1 back=8",
        "front=12",
        "front=11 back=",
        "front=0 back=",
        "front=1 front=2 back=9",
        "left=1 right=2",
    ],
)
def test_bad_states_are_usage_errors(text: str) -> None:
    game = DoubleShutter(DoubleShutterRules())
    with pytest.raises(UsageError):
        game.parse_state(text)


def test_contradictory_rules_are_usage_errors() -> None:
    for bad in (
        {"columns": 0},
        {"columns": 10},
        {"objective": "win"},
        {"objective": "target"},
        {"target": 3},
        {"one_die": "sometimes"},
        {"dice": 1},
    ):
        with pytest.raises(UsageError):
            DoubleShutterRules(**bad)  # type: ignore[arg-type]


# -- the threshold family --------------------------------------------------------------------


def test_threshold_family_matches_one_solve_per_target() -> None:
    game, g, _ = solved()
    targets = [0, 4, 13]
    family = game.threshold_family(g, targets)
    for k, n in enumerate(targets):
        _, _, sol_n = solved(objective="target", target=n)
        assert np.abs(family.value[:, k] - sol_n.value).max() <= 1e-12
        assert (family.choice[:, k] == sol_n.choice).all()
    # target 0 is the all-or-nothing objective
    _, _, zero = solved(objective="shut")
    assert np.abs(family.value[:, 0] - zero.value).max() <= 1e-12


# -- the built tables ------------------------------------------------------------------------


def summary(built: Path) -> pl.DataFrame:
    return tables.read_table(built, "summary")


def start_row(built: Path, variant: str) -> dict:
    states = tables.read_table(built, "states", variant)
    return states.filter(pl.col("state") == START).row(0, named=True)


def test_summary_holds_seed_001_figures(built: Path) -> None:
    rows = summary(built)
    ds = rows.filter(pl.col("variant") == "double-shutter")
    score = ds.filter(pl.col("figure") == "min_expected_score")["value"].item()
    assert abs(score - 19.427) < 5e-4  # seed 001_ad09a03ebddbc804.txt
    assert score == start_row(built, "double-shutter")["value"]
    zero = rows.filter(pl.col("variant") == "double-shutter-zero")
    assert abs(zero["value"].item() - 0.923) < 5e-4  # seed 001_ad09a03ebddbc804.txt
    family = ds.filter(pl.col("figure") == "p_above").sort("parameter")
    assert family["parameter"].to_list() == list(range(21))
    assert (family["objective"] == "target").all()
    p = family["value"].to_numpy()
    assert (np.diff(p) < 0).all() and (p > 0).all() and (p < 1).all()


def test_p0_is_one_minus_the_zero_variant_value(built: Path) -> None:
    family = summary(built).filter(
        (pl.col("variant") == "double-shutter") & (pl.col("figure") == "p_above")
    )
    p0 = family.filter(pl.col("parameter") == 0)["value"].item()
    assert abs(p0 - (1 - start_row(built, "double-shutter-zero")["value"])) <= 1e-12


def test_p_of_n_query_prints_the_family(built: Path) -> None:
    out = run_query("double_shutter_p_of_n", built)
    family = summary(built).filter(pl.col("figure") == "p_above").sort("parameter")
    assert out["n"].to_list() == list(range(21))
    assert np.allclose(out["p_n"].to_numpy(), family["value"].to_numpy(), rtol=0, atol=0)
    assert np.allclose(out["p_n"] + out["p_within"], 1.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("variant", ["double-shutter", "double-shutter-zero"])
def test_every_state_satisfies_bellman_from_the_tables(built: Path, variant: str) -> None:
    states = tables.read_table(built, "states", variant)
    edges = tables.read_table(built, "edges", variant)
    maximise = states["maximise"][0]
    best = pl.max if maximise else pl.min
    values = states.select("state_id", pl.col("value").alias("next_value"))
    by_node = (
        edges.join(values, left_on="next_state_id", right_on="state_id", how="left")
        .with_columns(edge=pl.col("reward") + pl.col("sign") * pl.col("next_value").fill_null(0.0))
        .group_by("state_id", "dice", "roll")
        .agg(best("edge").alias("edge"), pl.col("prob").first())
    )
    by_dice = by_node.group_by("state_id", "dice").agg(
        (pl.col("prob") * pl.col("edge")).sum().alias("v"), pl.col("prob").sum().alias("p")
    )
    assert np.allclose(by_dice["p"].to_numpy(), 1.0, rtol=0, atol=1e-12)
    # ties between dice go to two dice, as the solver does
    order = by_dice.sort("state_id", "dice")
    recomputed = order.group_by("state_id").agg(
        best("v").alias("v"), pl.col("dice"), pl.col("v").alias("vs")
    )
    joined = states.join(recomputed, on="state_id", how="left")
    live = joined.filter(~pl.col("terminal"))
    assert live.height == states.height - 1
    err = (live["value"] - live["v"]).abs() / live["value"].abs().clip(lower_bound=1.0)
    assert err.max() <= 1e-12
    for row in live.filter(pl.col("choice_options") == 2).iter_rows(named=True):
        tol = 1e-12 * max(1.0, abs(row["v"]))
        ties = [
            d for d, v in zip(row["dice_right"], row["vs"], strict=True) if abs(v - row["v"]) <= tol
        ]
        assert row["dice"] == max(ties)
    shut = joined.filter(pl.col("terminal"))
    assert shut["state"].to_list() == ["222222222"]
    assert shut["value"].item() == (1.0 if maximise else 0.0)


def test_one_die_query_lists_the_states_that_roll_one_die(built: Path) -> None:
    out = run_query("one_die_preferred", built, variant="double-shutter")
    states = tables.read_table(built, "states", "double-shutter")
    chosen = states.filter((pl.col("dice") == 1) & (pl.col("choice_options") == 2))
    assert out.height > 0
    assert sorted(out["state_id"].to_list()) == sorted(chosen["state_id"].to_list())
    assert (out["gain"] > 0).all()
    assert np.allclose(out["value"], out["value_one_die"], rtol=1e-12, atol=0)
    # one die is not always better: some states allow it and still roll two
    allowed = states.filter(pl.col("choice_options") == 2).height
    assert allowed > chosen.height


# -- the command line ------------------------------------------------------------------------


def test_expect_and_move_accept_both_state_forms(cli, built: Path) -> None:
    a = cli(["expect", "--variant", "double-shutter", START, "--data-dir", built])
    b = cli(["expect", "-v", "double-shutter", "front=123456789 back=123456789", "-d", built])
    assert a.code == 0 and b.code == 0 and a.stdout == b.stdout
    assert abs(float(a.stdout) - 19.427) < 5e-4  # seed 001_ad09a03ebddbc804.txt
    moved = cli(["move", "-v", "double-shutter-zero", "front=1 back=9", "10", "-d", built])
    assert moved.code == 0
    assert "best move [1, -9]" in moved.stdout


def test_bad_state_on_the_command_line_is_one_line_exit_2(cli, built: Path) -> None:
    bad = cli(["expect", "-v", "double-shutter", "front=1 back=8", "-d", built])
    assert bad.code == 2
    assert bad.stderr.count("\n") == 1 and "back tile 9" in bad.stderr


def test_state_description_columns() -> None:
    game = DoubleShutter(DoubleShutterRules())
    row = game.describe_states(np.array([game.parse_state("front=23 back=1789")])).row(
        0, named=True
    )
    assert row["state"] == "100222221"
    assert row["tiles"] == "front=23 back=1789"
    assert row["front_tiles"] == [2, 3] and row["back_tiles"] == [1, 7, 8, 9]
    assert row["open_tiles"] == [2, 3, -1, -7, -8, -9]
    # back 8 and 7 stand behind front 2 and 3, so they cannot be shut on their own yet
    assert row["exposed_sum"] == 2 + 3 + 9 + 1
    assert row["open_sum"] == 30 and row["n_open"] == 6 and row["score"] == 2 * 5 + 25


def brute_force_moves(digits: list[int], roll: int) -> set[tuple[tuple[int, ...], str]]:
    """Every legal move of a 9-column box by direct search: (signed tiles, next state string).

    Independent of the game module: tiles are (row, column, value) and a back tile may go when
    its front tile is down already or goes in the same move.
    """
    standing = [("front", c, c + 1) for c in range(9) if digits[c] == 0]
    standing += [("back", c, 9 - c) for c in range(9) if digits[c] <= 1]
    found: set[tuple[tuple[int, ...], str]] = set()

    def search(start: int, chosen: list[tuple[str, int, int]], total: int) -> None:
        if total == roll and chosen:
            fronts = {c for row, c, _ in chosen if row == "front"}
            if all(digits[c] == 1 or c in fronts for row, c, _ in chosen if row == "back"):
                after = list(digits)
                for _, c, _ in chosen:
                    after[c] += 1
                signed = sorted(v for row, _, v in chosen if row == "front")
                signed += [-v for v in sorted(v for row, _, v in chosen if row == "back")]
                found.add((tuple(signed), "".join(map(str, after))))
            return
        for i in range(start, len(standing)):
            if total + standing[i][2] <= roll:
                search(i + 1, [*chosen, standing[i]], total + standing[i][2])

    search(0, [], 0)
    return found


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=9, max_size=9), st.integers(1, 12))
def test_moves_match_a_brute_force_search(digits: list[int], roll: int) -> None:
    game, g, _ = solved()
    state = "".join(map(str, digits))
    idx = int(np.flatnonzero(g.state_id == int(state, 3))[0])
    node = np.flatnonzero((g.node_state == idx) & (g.node_roll == roll))
    if node.shape[0] == 0:  # the roll cannot happen here (1 needs one die; nothing when shut)
        one_die = game.exposed_sums(np.array([int(state, 3)]))[0] <= 6
        assert state == "222222222" or (roll == 1 and not one_die)
        return
    rows = np.flatnonzero((g.mv_node == node[0]) & (g.mv_label >= 0))
    moves = game.describe_moves(g.mv_label[rows]).to_list()
    nexts = game.describe_states(g.state_id[g.mv_dst[rows]])["state"].to_list()
    got = {(tuple(m), n) for m, n in zip(moves, nexts, strict=True)}
    assert len(got) == rows.shape[0]
    assert got == brute_force_moves(digits, roll)
