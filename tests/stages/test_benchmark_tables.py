"""benchmarks.parquet, reach tables, the `benchmark` command and the strategy queries."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from pipeline.analysis.sql import run_query
from pipeline.games.base import Game
from pipeline.games.registry import REGISTRY
from pipeline.games.shutbox.benchmark import COLUMNS
from pipeline.games.shutbox.strategies import NAMES, tile_view
from pipeline.store import tables

SEED_000 = "000_9b8fddd618491a4c.txt"
SEED_001 = "001_ad09a03ebddbc804.txt"


def has_tile_view(game: Game) -> bool:
    """Whether the move strategies apply to the game."""
    return tile_view(game, game.graph()) is not None


@pytest.fixture
def data(built: Path, tmp_path: Path) -> Path:
    """A private copy of the session build, for tests that write to it."""
    shutil.copytree(built, tmp_path / "data")
    return tmp_path / "data"


def test_build_writes_exact_rows_for_every_strategy_and_variant(built: Path) -> None:
    bench = tables.read_table(built, "benchmarks")
    assert tuple(bench.columns[: len(COLUMNS)]) == COLUMNS
    exact = bench.filter(pl.col("method") == "exact")
    one_player = [v for v in REGISTRY.values() if v.in_all and has_tile_view(v.make())]
    assert {"classic", "lever", "double-shutter"} <= {v.name for v in one_player}
    for variant in one_player:
        rows = exact.filter(pl.col("variant") == variant.name)
        assert sorted(rows["strategy"]) == sorted(NAMES), variant.name
    assert exact["games"].null_count() == exact.height
    assert exact["win_rate"].is_between(0, 1).all()


def test_exact_optimal_rows_equal_the_solved_start_values(built: Path) -> None:
    states = tables.read_table(built, "states")
    bench = tables.read_table(built, "benchmarks").filter(
        (pl.col("method") == "exact") & (pl.col("strategy") == "optimal")
    )
    start = states.sort("open_sum", descending=True).group_by("variant").first()
    joined = bench.join(start, on="variant")
    for row in joined.iter_rows(named=True):
        measured = row["win_rate"] if row["objective"] == "shut" else row["expected_score"]
        if row["objective"] in ("shut", "score"):
            assert abs(measured - row["value"]) <= 1e-12 * max(1.0, abs(row["value"]))


def test_reach_tables_are_distributions(built: Path) -> None:
    reach = tables.read_table(built, "reach")
    per = reach.group_by("variant", "strategy").agg(
        end=pl.col("end_prob").sum(), start=pl.col("reach_prob").max()
    )
    assert (per["end"] - 1.0).abs().max() < 1e-12
    assert (per["start"] == 1.0).all()
    nodes = tables.read_table(built, "node_reach").filter(pl.col("strategy") == "random")
    policy = tables.read_table(built, "policy")
    joined = nodes.join(policy, on=["variant", "state_id", "roll"])
    assert joined.height == nodes.height
    # random names its move only where it has no choice
    assert (joined["move"].is_not_null() == (joined["n_moves"] == 1)).all()


def test_benchmark_command_adds_simulation_rows_and_build_keeps_them(cli, data: Path) -> None:
    result = cli(["benchmark", "--variant", "classic", "--games", 30000, "--seed", 3, "-d", data])
    assert result.code == 0, result.stderr
    for name in NAMES:
        assert name in result.stdout
    bench = tables.read_table(data, "benchmarks", "classic")
    sim = bench.filter(pl.col("method") == "simulation")
    assert sorted(sim["strategy"]) == sorted(NAMES)
    assert (sim["games"] == 30000).all() and (sim["seed"] == 3).all()
    assert (sim["ci_low"] <= sim["win_rate"]).all() and (sim["win_rate"] <= sim["ci_high"]).all()
    # rebuilding the variant rewrites the exact rows and keeps the simulation rows
    assert cli(["build", "--variant", "classic", "-d", data]).code == 0
    again = tables.read_table(data, "benchmarks", "classic")
    assert (
        again.filter(pl.col("method") == "simulation").sort("strategy").equals(sim.sort("strategy"))
    )
    assert again.filter(pl.col("method") == "exact").height == len(NAMES)
    # a second benchmark of one strategy replaces only that strategy's simulation row
    assert cli(["benchmark", "-s", "greedy", "-n", 20000, "--seed", 4, "-d", data]).code == 0
    last = tables.read_table(data, "benchmarks", "classic").filter(pl.col("method") == "simulation")
    assert last.height == len(NAMES)
    seeds = dict(zip(last["strategy"], last["seed"], strict=True))
    assert seeds["greedy"] == 4 and seeds["random"] == 3
    # other variants' rows are untouched
    assert tables.read_table(data, "benchmarks", "lever").height == len(NAMES)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--games", "0"], "--games must be between 1 and"),
        (["--seed", "-1"], "--seed must be between 0 and"),
        (["-s", "clever"], "unknown strategy 'clever'"),
        (["--variant", "nope"], "unknown variant 'nope'"),
    ],
)
def test_benchmark_bad_input_is_one_line_exit_2(cli, data: Path, args, message) -> None:
    before = (data / "benchmarks.parquet").read_bytes()
    result = cli(["benchmark", "-n", "1000", "-d", data, *args])
    assert result.code == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert (data / "benchmarks.parquet").read_bytes() == before


def test_top_states_reproduce_seed_000(built: Path) -> None:
    # seed 000_9b8fddd618491a4c.txt: the ten best states below certainty, with their P(win)
    published = {
        "124": 0.18209876543209874,
        "34": 0.1759259259259259,
        "25": 0.1728395061728395,
        "7": 0.16666666666666666,
        "16": 0.16666666666666666,
        "125": 0.15895061728395063,
        "134": 0.15817901234567902,
        "234": 0.1550925925925926,
        "35": 0.15123456790123457,
        "1234": 0.14744084362139914,
    }
    top = run_query("top_states", built, variant="classic")
    assert top.height == 10
    assert set(top["tiles"]) == set(published)
    for tiles, value in zip(top["tiles"], top["value"], strict=True):
        assert abs(value - published[tiles]) < 1e-12, tiles
    assert top["value"].is_sorted(descending=True)


def test_strategy_comparison_ranks_optimal_first(built: Path) -> None:
    table = run_query("strategy_comparison", built, variant="classic")
    assert table.height == len(NAMES)
    assert table["strategy"][0] == "optimal" and table["loss_pct"][0] == 0.0
    assert (table["loss_pct"] >= 0).all() and table["win_pct"].is_sorted(descending=True)


@pytest.mark.parametrize("variant", ["classic", "classic-score"])
def test_greedy_mistakes_add_up_to_greedys_whole_loss(built: Path, variant: str) -> None:
    mistakes = run_query("strategy_mistakes", built, variant=variant)
    bench = tables.read_table(built, "benchmarks", variant).filter(pl.col("method") == "exact")
    value = dict(
        zip(
            bench["strategy"],
            bench["win_rate" if variant == "classic" else "expected_score"],
            strict=True,
        )
    )
    gap = abs(value["optimal"] - value["greedy"])
    assert mistakes.height > 0
    assert abs(mistakes["gap_share"].sum() - gap) < 1e-12
    assert (mistakes["loss"] > 0).all()
    pairs = zip(mistakes["move"].to_list(), mistakes["best_move"].to_list(), strict=True)
    assert all(a != b for a, b in pairs)
    assert mistakes["weight"].is_sorted(descending=True)


def test_custom_rule_sets_get_exact_and_simulated_rows(cli, tmp_path: Path) -> None:
    rules = ["--tiles", "7", "--sides", "4", "--objective", "target", "--target", "3"]
    assert cli(["build", *rules, "-d", tmp_path]).code == 0
    result = cli(["benchmark", *rules, "-n", "5000", "-s", "greedy,optimal", "-d", tmp_path])
    assert result.code == 0, result.stderr
    bench = tables.read_table(tmp_path, "benchmarks", "stb-7t-2d4-target3")
    assert bench.filter(pl.col("method") == "exact").height == len(NAMES)
    assert sorted(bench.filter(pl.col("method") == "simulation")["strategy"]) == [
        "greedy",
        "optimal",
    ]


def test_keyed_table_without_its_key_columns_is_refused(tmp_path: Path) -> None:
    pl.DataFrame({"variant": ["classic"], "x": [1]}).write_parquet(tmp_path / "benchmarks.parquet")
    frame = pl.DataFrame({"strategy": ["greedy"], "method": ["exact"]})
    with pytest.raises(tables.TableError, match="key columns"):
        tables.replace_rows(tmp_path, "benchmarks", {"classic": frame}, {"classic": {}})


def test_double_shutter_optimal_rows_reproduce_seed_001_by_the_forward_pass(built: Path) -> None:
    # seed 001_ad09a03ebddbc804.txt: minimum expected score 19.427; P(not finishing with 0) under
    # the strategy made for it 0.923. Here both come from the distribution of end states.
    exact = tables.read_table(built, "benchmarks").filter(
        (pl.col("method") == "exact") & (pl.col("strategy") == "optimal")
    )
    score = exact.filter(pl.col("variant") == "double-shutter")["expected_score"][0]
    zero = exact.filter(pl.col("variant") == "double-shutter-zero")["win_rate"][0]
    assert abs(score - 19.427) < 0.0005
    assert abs((1 - zero) - 0.923) < 0.0005


def test_the_exact_benchmark_is_the_same_whatever_threads_blas_has() -> None:
    """Issue 41: the kill-safety test once found benchmarks "neither the old nor the new
    table": Double Shutter's expected scores, summed as a BLAS dot product, changed in the last
    digit with the threads BLAS had free (one when another thread held them, as under load),
    so a rebuild wrote another table. The sum is numpy's own now, the same every time."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    code = (
        "from pipeline.games.registry import get_variant\n"
        "from pipeline.games.solved import Solved\n"
        "from pipeline.games.shutbox.benchmark import evaluate_strategies\n"
        "v = get_variant('double-shutter'); g = v.make(); s = Solved(v, g, g.graph())\n"
        "print([(e.win_rate.hex(), e.expected_score.hex()) for e in evaluate_strategies(s)])\n"
    )
    found = set()
    for threads in ("1", "2"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
        run = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        found.add(run.stdout)
    assert len(found) == 1, found
