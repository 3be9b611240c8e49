"""The Knucklebones queries on knucklebones-2x2: checked-in answers and independent cross-checks.

`knucklebones_first_player` is checked against a value-iteration solve of the graph (no tables);
`knucklebones_search_loss`'s choices against the Python players it describes: the compiled
search with seed 004's evaluator at depth 2, and the greedy gain of `knucklebones_play`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.analysis import sql
from pipeline.errors import TablesMissingError
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.games.knucklebones.players.evaluator import gain_table
from pipeline.games.knucklebones.players.search import SEED, Searcher
from pipeline.solve.value_iteration import solve_value_iteration
from pipeline.store import outputs
from tests.analysis.test_query import EXPECTED, assert_same_rows, csv_rows
from tests.conftest import invoke

VARIANT = "knucklebones-2x2"


@pytest.fixture(scope="module")
def built_2x2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both objectives of the 2x2 board, built by the CLI."""
    data = tmp_path_factory.mktemp("kbq")
    result = invoke(["build", "--variant", f"{VARIANT},{VARIANT}-score", "-d", data])
    assert result.code == 0, result.stderr
    return data


@pytest.mark.parametrize("name", ["knucklebones_first_player", "knucklebones_search_loss"])
def test_checked_in_answers(built_2x2: Path, name: str) -> None:
    got = outputs.to_csv(sql.run_query(name, built_2x2, variant=VARIANT))
    path = EXPECTED / f"{name}__{VARIANT}.csv"
    assert_same_rows(csv_rows(got), csv_rows(path.read_text()), path.name)


def test_first_player_agrees_with_value_iteration(built_2x2: Path) -> None:
    row = sql.run_query("knucklebones_first_player", built_2x2).row(0, named=True)
    wins = solve_value_iteration(Knucklebones(KnuckleRules(2, 2)).graph()).value[0]
    score = solve_value_iteration(Knucklebones(KnuckleRules(2, 2, 6, "score")).graph()).value[0]
    assert row["board"] == "2x2 d6"
    assert row["first_player_win"] == pytest.approx(wins, abs=1e-10)
    assert row["value_of_going_first"] == pytest.approx(2 * wins - 1, abs=1e-10)
    assert row["first_player_score_diff"] == pytest.approx(score, abs=1e-10)
    # Moving first is worth something on this board: more than 14 points of win probability.
    assert row["value_of_going_first"] > 0.14


def decision_rows(data_dir: Path) -> pl.DataFrame:
    """The query's per-decision CTE (strategy, state_id, roll, regret), before aggregation."""
    text = sql.read_sql(sql.query_file("knucklebones_search_loss"))
    assert text.rstrip().endswith("select * from final")
    con = sql.connect(data_dir, {"variant": VARIANT})
    try:
        chain = text.rstrip().removesuffix("select * from final")
        return con.sql(chain + "select * from decision").pl()
    finally:
        con.close()


def test_search_loss_choices_match_the_python_players(built_2x2: Path) -> None:
    game = Knucklebones(KnuckleRules(2, 2))
    searcher = Searcher(game)
    moves = pl.read_parquet(built_2x2 / "moves.parquet").filter(variant=VARIANT)
    decisions = decision_rows(built_2x2)
    t = game.t
    sample = decisions.filter(strategy="seed-d2").sample(300, seed=5)
    for s, roll in sample.select("state_id", "roll").iter_rows():
        pairs = np.sort(game.positions[s].astype(np.int64))
        regret = dict(
            moves.filter(state_id=s, roll=roll)
            .select(pl.col("move").list.first() - 1, "regret")
            .iter_rows()
        )
        d2 = {j: ev.diff for j, ev in searcher.move_values(pairs, roll, 2, SEED)}
        gain = gain_table(t)[pairs, roll - 1]
        greedy = {j: float(gain[j]) for j in d2}
        for strategy, measure in (("seed-d2", d2), ("greedy", greedy)):
            best = max(measure.values())
            chosen = [regret[j] for j, v in measure.items() if v >= best - 1e-9]
            got = decisions.filter(strategy=strategy, state_id=s, roll=roll)["regret"][0]
            assert got == pytest.approx(np.mean(chosen), abs=1e-12), (strategy, s, roll)


def test_search_loss_needs_the_moves_table(built_2x2: Path, tmp_path: Path) -> None:
    # The big boards keep states and policy only: nothing prices the move a strategy picks.
    for name in ("states", "policy"):
        (tmp_path / f"{name}.parquet").symlink_to(built_2x2 / f"{name}.parquet")
    with pytest.raises(TablesMissingError, match="not built"):
        sql.run_query("knucklebones_search_loss", tmp_path, variant=VARIANT)
