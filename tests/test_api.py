"""The Python API agrees with the tables and the CLI, and fails with one-line domain errors."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

import pipeline
from pipeline.errors import TablesMissingError, UsageError


def test_expect_matches_the_states_table_for_every_state(built: Path) -> None:
    states = pipeline.load_table("states", variant="six-tiles-one-die", data_dir=built)
    for row in states.filter(pl.col("tiles") != "").iter_rows(named=True):
        got = pipeline.expect("six-tiles-one-die", row["open_tiles"], data_dir=built)
        assert got == row["value"]
    # PUBLISHED.md, citing The Fiddler (13 Sep 2024): six tiles, one die, P(shut) = 145/1944.
    full = pipeline.expect("six-tiles-one-die", "123456", data_dir=built)
    assert math.isclose(full, 145 / 1944, rel_tol=1e-12)


def test_best_move_matches_the_policy_table(built: Path) -> None:
    policy = pipeline.load_table("policy", "classic", built).filter(pl.col("tiles") == "12345")
    for row in policy.iter_rows(named=True):
        move = pipeline.best_move("classic", "12345", row["roll"], data_dir=built)
        assert move == (None if row["stuck"] else list(row["best_move"]))
    # Seed 000: with 1..5 open and a roll of 7, shut 3 and 4 rather than 2 and 5.
    assert pipeline.best_move("classic", [1, 2, 3, 4, 5], 7, data_dir=built) == [3, 4]
    values = pipeline.move_values("classic", "12345", 7, data_dir=built)
    assert values["move"].to_list()[:2] == [[3, 4], [2, 5]] and values["regret"][0] == 0.0


def test_tiles_above_nine_and_the_environment_default(built: Path, monkeypatch) -> None:
    monkeypatch.setenv("STB_DATA_DIR", str(built))
    assert pipeline.expect("twelve-tiles", [1, 2, 10]) == pipeline.expect("twelve-tiles", "1,2,10")
    assert pipeline.load_table("states").select("variant").n_unique() >= 8
    assert pipeline.query("best_opening_roll")["roll"][0] == 9


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda d: pipeline.expect("nope", "12", data_dir=d), UsageError, "unknown variant"),
        (lambda d: pipeline.expect("classic", "1x", data_dir=d), UsageError, "not a tile"),
        (lambda d: pipeline.best_move("classic", "12", 13, data_dir=d), UsageError, "impossible"),
        (lambda d: pipeline.expect("classic", "12", p1_score=3, data_dir=d), UsageError, "two-"),
        (lambda d: pipeline.load_table("nope", data_dir=d), TablesMissingError, "build"),
    ],
)
def test_errors_are_domain_errors_with_one_line(built: Path, call, error, text) -> None:
    with pytest.raises(error) as caught:
        call(built)
    assert text in str(caught.value) and "\n" not in str(caught.value)


def test_unbuilt_directory_says_build_first(tmp_path: Path) -> None:
    with pytest.raises(TablesMissingError, match="stb-pipeline build"):
        pipeline.expect("classic", "123", data_dir=tmp_path)


def test_knucklebones_column_is_exact_where_the_board_is_built(built: Path, tmp_path: Path) -> None:
    exact = pipeline.knucklebones_column(
        "4_/__", "2_/__", 4, variant="knucklebones-2x2", data_dir=built
    )
    assert exact.exact and exact.tables == ("knucklebones-2x2", "knucklebones-2x2-score")
    assert all(c.exact and c.win is not None and c.diff is not None for c in exact.columns)
    assert exact.best is not None and exact.best.win == max(c.value for c in exact.columns)
    # the same answer as pipeline.board's, the columns' values the tables'
    assert exact == pipeline.board("knucklebones-2x2", "4/_;2/_", 4, data_dir=built)
    searched = pipeline.knucklebones_column(
        "4_/__", "2_/__", 4, variant="knucklebones-2x2", depth=1, data_dir=tmp_path
    )
    assert searched.tables == () and [c.column for c in searched.columns] == [1, 2]
    with pytest.raises(UsageError):
        pipeline.knucklebones_column("4_/__", "2_/__", 7, variant="knucklebones-2x2")


def test_dir_lists_the_api_before_its_first_use() -> None:
    """Issue 41: the face loads the API on first use, so `dir(pipeline)` listed none of it."""
    import subprocess
    import sys

    code = (
        "import pipeline, sys; print(' '.join(dir(pipeline))); print('pipeline.api' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names, loaded = run.stdout.splitlines()
    assert set(pipeline.__all__) <= set(names.split()) and loaded == "False"


def test_a_rule_set_built_under_its_own_name_is_named_so_everywhere(tmp_path: Path) -> None:
    """Issue 39: `build --name my-rules` made `expect --variant my-rules` work on the command
    line (through the manifest) but not ``pipeline.expect("my-rules")``: one resolution now,
    the data directory's (:mod:`pipeline.store.directory`), for the CLI, the API and the
    server."""
    from starlette.testclient import TestClient

    from pipeline.apps.server.web import create_app
    from tests.conftest import invoke

    rules = ["--tiles", "5", "--one-die", "optional", "--one-die-sum", "4", "--name", "my-rules"]
    assert invoke(["build", *rules, "-d", tmp_path, "-q"]).code == 0
    said = invoke(["expect", "--variant", "my-rules", "1245", "-d", tmp_path])
    assert said.code == 0, said.stderr
    value = pipeline.expect("my-rules", "1245", data_dir=tmp_path)
    assert float(said.stdout.split()[-1]) == pytest.approx(value, abs=1e-6)
    assert pipeline.best_move("my-rules", "1245", 3, data_dir=tmp_path) in ([1, 2], [3])
    served = TestClient(create_app(tmp_path)).get("/my-rules/position.json?tiles=1245")
    assert served.status_code == 200 and served.json()["state"]["value"] == value
    with pytest.raises(UsageError, match="my-rulez"):
        pipeline.expect("my-rulez", "1245", data_dir=tmp_path)
