"""The N-player tables as `build` writes them: the graph-free build against the graph solve,
the commands that read them, and bad input on the command line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.analysis.sql import run_query
from pipeline.games.nplayer.game import NPlayer
from pipeline.games.nplayer.rules import NPlayerRules
from pipeline.solve.rank_order import solve_rank_order
from pipeline.store import tables
from tests.conftest import invoke
from tests.support.tables import contract_rows

RULES = [
    "--players",
    "3",
    "--tiles",
    "5",
    "--sides",
    "4",
    "--one-die",
    "forced",
    "--one-die-sum",
    "4",
]
NAME = "three-small"


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small three-player game built without a graph (the way every N-player variant but
    two-player is built)."""
    data = tmp_path_factory.mktemp("nplayer")
    result = invoke(["build", *RULES, "--name", NAME, "-d", data])
    assert result.code == 0, result.stderr
    return data


def test_the_graph_free_build_equals_the_graph_solve(small: Path) -> None:
    """Every state's value and every player's share equal the graph build's within 1e-12;
    the policy's moves are the graph solve's."""
    game = NPlayer(NPlayerRules.make(players=3, tiles=5, sides=4, one_die_sum=4))
    g = game.graph()
    sol = solve_rank_order(g)
    states = tables.read_table(small, "states", NAME).sort("state_id")
    assert states["state_id"].to_list() == g.state_id.tolist()
    assert np.abs(states["value"].to_numpy() - sol.value).max() <= 1e-12
    graph_rows = game.describe_states(g.state_id)
    for col in ["share_holder", "share_beaten", "share_1", "share_2", "share_3"]:
        ours, theirs = states[col].to_numpy(), graph_rows[col].to_numpy()
        assert np.array_equal(np.isnan(ours.astype(float)), np.isnan(theirs.astype(float))), col
        assert np.nanmax(np.abs(ours.astype(float) - theirs.astype(float))) <= 1e-12, col
    for col in ["player", "best_score", "best_count", "tiles", "n_open", "score"]:
        assert states[col].to_list() == graph_rows[col].to_list(), col
    policy = tables.read_table(small, "policy", NAME)
    assert policy.height == g.node_state.shape[0]
    assert set(policy["kind"].unique().to_list()) == {"move", "pass", "end"}


def test_contracts_hold(small: Path) -> None:
    for name in ("nplayer_shares", "unique_state", "value_bounds", "policy_optimal"):
        assert contract_rows(name, small).height == 0, name


def test_position_query_answers_every_player(small: Path) -> None:
    """Player 3, best score 5 held by one player, tiles 1, 3, 4 open, roll 4: the moves, each
    player's chance, shares adding up to 1."""
    found = run_query(
        "nplayer_position", small, variant=NAME, player=3, best_score=5, tiles="134", roll=4
    )
    assert found.height > 0
    best = found.filter(pl.col("is_best"))
    total = (best["share"] * best["players_like_this"]).sum()
    assert total == pytest.approx(1, abs=1e-12)
    assert set(best["who"].to_list()) == {"mover", "holder of the best", "beaten"}


def test_expect_and_move_for_any_seat(cli, small: Path) -> None:
    got = cli(["expect", "-v", NAME, "134", "--player", "3", "--best-score", "5", "-d", small])
    assert got.code == 0, got.stderr
    states = tables.read_table(small, "states", NAME)
    row = states.filter(
        (pl.col("player") == 3)
        & (pl.col("best_score") == 5)
        & (pl.col("best_count") == 1)
        & (pl.col("tiles") == "134")
    )
    assert float(got.stdout) == pytest.approx(row["value"][0], abs=1e-15)
    moved = cli(["move", "-v", NAME, "134", "4", "--player", "3", "--best-score", "5", "-d", small])
    assert moved.code == 0 and "best move" in moved.stdout


def test_outcomes_and_seats_queries(small: Path) -> None:
    seats = run_query("nplayer_seats", small, variant=NAME)
    assert seats["seat"].to_list() == [1, 2, 3]
    assert seats["expected_payoff"].sum() == pytest.approx(1, abs=1e-12)
    assert (seats["loss_shut_chaser"] >= -1e-12).all()
    outcomes = run_query("nplayer_outcomes", small, variant=NAME)
    assert outcomes["probability"].sum() == pytest.approx(1, abs=1e-12)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["build", "--players", "0"], "players must be between 2 and 6"),
        (["build", "--players", "1"], "players must be between 2 and 6"),
        (["build", "--players", "99"], "players must be between 2 and 6"),
        (["build", "--players", "3", "--objective", "score"], "one-player rule"),
        (["build", "--payoff", "stake"], "go with --players"),
        (["build", "--players", "3", "--payoff", "cash"], "payoff"),
    ],
)
def test_bad_rules_write_nothing(cli, tmp_path: Path, args: list[str], message: str) -> None:
    data = tmp_path / "data"
    result = cli([*args, "-d", data])
    assert result.code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0]
    assert not data.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--player", "0", "--best-score", "5"], "player 0 is not a seat"),
        (["--player", "4", "--best-score", "5"], "player 4 is not a seat"),
        (["--player", "3", "--best-score", "999"], "cannot finish a turn with score 999"),
        (["--player", "3", "--best-score", "5", "--best-count", "3"], "cannot be shared by 3"),
    ],
)
def test_bad_positions(cli, small: Path, extra: list[str], message: str) -> None:
    before = sorted(p.name for p in small.rglob("*"))
    result = cli(["expect", "-v", NAME, "134", *extra, "-d", small])
    assert result.code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0]
    assert sorted(p.name for p in small.rglob("*")) == before


@pytest.mark.parametrize("seat", [0, 1, 2, 3])
def test_play_a_seat_or_watch(small: Path, seat: int) -> None:
    """`play` against the other players (or watching every seat): games end with a result line,
    and the start value is the seat's share at the start."""
    import io

    from rich.console import Console

    from pipeline.apps import teaching_game as play
    from pipeline.store.directory import scan

    coach = play.Coach(small, scan(small).customs()[NAME])
    assert coach.players == 3
    for seed in range(5):
        console = Console(file=io.StringIO(), width=120)
        record = play.play_game(coach, lambda _q, _n: 1, console, seed=seed, seat=seat)
        assert record.finished and record.outcome
        assert "Player" in record.outcome or "player" in record.outcome
        if seat:
            assert record.start_value == pytest.approx(coach.start_shares[seat], abs=1e-15)
        assert record.given_away == pytest.approx(0, abs=1e-12)  # always the best move


def test_play_refuses_a_seat_outside_the_game(small: Path) -> None:
    from pipeline.apps import teaching_game as play
    from pipeline.errors import UsageError
    from pipeline.store.directory import scan

    coach = play.Coach(small, scan(small).customs()[NAME])
    with pytest.raises(UsageError, match=r"seats 1\.\.3"):
        play.play_game(coach, lambda _q, _n: 1, None, seed=1, seat=4)  # type: ignore[arg-type]
