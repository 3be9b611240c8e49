"""The stage tables of the one-player variants: Bellman consistency, shape, metadata, rebuilds."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline.store import tables

ONE_PLAYER = ["classic", "classic-score", "lever", "one-die-6", "six-tiles-one-die"]


def bellman_recomputed(data: Path, variant: str) -> pl.DataFrame:
    """Each state's value recomputed from edges.parquet and the successors' values."""
    states = tables.read_table(data, "states", variant)
    edges = tables.read_table(data, "edges", variant)
    maximise = bool(states["maximise"][0])
    best = pl.max if maximise else pl.min
    succ = states.select(pl.col("state_id").alias("next_state_id"), pl.col("value").alias("nv"))
    per_edge = edges.join(succ, on="next_state_id", how="left").with_columns(
        ev=pl.col("reward") + pl.col("sign") * pl.col("nv").fill_null(0.0)
    )
    per_roll = per_edge.group_by("state_id", "dice", "roll").agg(
        pl.first("prob"), best("ev").alias("q")
    )
    per_dice = per_roll.group_by("state_id", "dice").agg(
        (pl.col("prob") * pl.col("q")).sum().alias("v"), pl.col("prob").sum().alias("p")
    )
    per_state = per_dice.group_by("state_id").agg(best("v").alias("recomputed"), pl.col("p"))
    return states.join(per_state, on="state_id", how="left")


@pytest.mark.parametrize("variant", ONE_PLAYER)
def test_every_state_satisfies_its_bellman_equation(built: Path, variant: str) -> None:
    frame = bellman_recomputed(built, variant)
    live = frame.filter(~pl.col("terminal"))
    assert live["recomputed"].null_count() == 0
    diff = (live["value"] - live["recomputed"]).abs().max()
    assert diff is not None and diff <= 1e-12
    for probs in live["p"]:
        assert all(abs(p - 1.0) <= 1e-12 for p in probs)
    shut = frame.filter(pl.col("terminal"))
    assert shut.height == 1 and shut["tiles"][0] == ""


def test_policy_table_reads_in_duckdb(built: Path) -> None:
    con = duckdb.connect()
    path = {"p": str(built / "policy.parquet")}
    rows = con.execute(
        "select count(*) from read_parquet($p) where variant = 'classic' and not stuck", path
    ).fetchall()
    assert rows[0][0] == 4040  # seed 000: 4,040 (state, roll) pairs
    [best9] = con.execute(
        "select best_move, value from read_parquet($p) "
        "where variant = 'classic' and tiles = '123456789' and roll = 9",
        path,
    ).fetchall()
    assert best9[0] == [9]
    assert best9[1] == pytest.approx(0.10150185360563307, abs=1e-12)  # seed 000


def test_moves_table_regret_is_loss_against_best(built: Path) -> None:
    moves = tables.read_table(built, "moves", "classic")
    node = moves.filter((pl.col("tiles") == "12345") & (pl.col("roll") == 7)).sort("regret")
    assert node["move"].to_list() == [[3, 4], [2, 5], [1, 2, 4]]
    assert node["regret"][0] == 0.0
    assert node["regret"][1] == pytest.approx(0.15895061728395063 - 0.15817901234567902, abs=1e-12)
    assert node["is_best"].to_list() == [True, False, False]


def test_each_file_records_rule_sets_as_metadata(built: Path) -> None:
    for name in ("states", "edges", "policy", "moves"):
        meta = pq.read_schema(built / f"{name}.parquet").metadata
        rules = json.loads(meta[b"stb.rules"])
        assert rules["lever"]["one_die_shut"] == [7, 8, 9]
        assert rules["classic"]["tiles"] == 9


def test_optional_dice_choice_is_recorded(built: Path) -> None:
    lever = tables.read_table(built, "states", "lever")
    free = lever.filter(pl.col("choice_options") == 2)
    # every state with 7, 8, 9 shut (and some tile open) offers the choice: 2**6 - 1 of them
    assert free.height == 63
    one_die = free.filter(pl.col("dice") == 1)["tiles"].to_list()
    assert "1" in one_die and "5" in one_die  # a lone 1 or 5 is only shut with one die


def test_rebuilding_one_variant_keeps_the_others(tmp_path: Path, cli) -> None:
    assert cli(["build", "--variant", "classic,lever", "-d", tmp_path]).code == 0
    before = tables.read_table(tmp_path, "states", "lever")
    assert cli(["build", "--variant", "classic", "-d", tmp_path]).code == 0
    after = tables.read_table(tmp_path, "states")
    assert sorted(after["variant"].unique().to_list()) == ["classic", "lever"]
    assert after.filter(pl.col("variant") == "lever").equals(before)
    assert after.filter(pl.col("variant") == "classic").height == 512


def test_enumerate_alone_writes_states_without_values(tmp_path: Path, cli) -> None:
    assert cli(["enumerate", "--variant", "classic", "-d", tmp_path]).code == 0
    states = tables.read_table(tmp_path, "states", "classic")
    assert states.height == 512 and states["value"].null_count() == 512
    assert cli(["expect", "123", "-d", tmp_path]).code == 2


def test_exact_mode_stores_fractions(tmp_path: Path, cli) -> None:
    # seed 000's 7.143 %, exactly; an independent fraction solve agreeing with the floats
    assert cli(["solve", "--variant", "classic", "--exact", "-d", tmp_path]).code == 0
    states = tables.read_table(tmp_path, "states", "classic")
    row = states.filter(pl.col("tiles") == "123456789").row(0, named=True)
    assert row["value_exact"] == "466473281/6530347008"
    assert row["value"] == pytest.approx(466473281 / 6530347008, abs=1e-12)


def test_large_boards_stream_states_and_policy_into_their_own_files(tmp_path: Path, cli) -> None:
    """Issue 14: a big custom box is solved without a graph; states and the best-move policy
    go to variants/<name>/, edges and moves only when asked, the shared tables are untouched."""
    result = cli(["build", "--tiles", "17", "--dice", "3", "-d", tmp_path])
    assert result.code == 0, result.stderr
    assert "without a graph" in result.stdout
    own = tmp_path / "variants" / "stb-17t-3d6-shut"
    # (and the one-shot `expect`'s lookup of its states: pipeline.store.lookup)
    assert sorted(p.name for p in own.iterdir()) == [
        "policy.parquet",
        "states.lookup",
        "states.parquet",
    ]
    assert not (tmp_path / "policy.parquet").exists()
    policy = tables.read_table(tmp_path, "policy", "stb-17t-3d6-shut")
    moving = policy.filter(~pl.col("stuck"))
    assert moving.height > 0 and moving["best_move_mask"].null_count() == 0
    assert cli(["verify", "-d", tmp_path]).code == 0
    again = cli(["build", "--tiles", "17", "--dice", "3", "--moves", "--edges", "-d", tmp_path])
    assert again.code == 0, again.stderr
    assert (own / "moves.parquet").exists() and (own / "edges.parquet").exists()


def test_a_big_boxs_policy_leaves_derivable_columns_to_its_readers(tmp_path: Path, cli) -> None:
    """Issue 14: the streamed policy of a big box does not store next_state_id and stuck (they
    follow from state_id and best_move_mask: a quarter of its encoding); every reader (polars,
    the DuckDB views, `move`) fills them in, equal to the solver's own."""
    from pipeline.analysis import sql
    from pipeline.games.shutbox.rules import RuleSet
    from pipeline.games.shutbox.stream import StreamSolver

    name = "stb-16t-2d6-score"
    assert cli(["build", "--tiles", "16", "--objective", "score", "-d", tmp_path]).code == 0
    raw = pl.read_parquet(tmp_path / "variants" / name / "policy.parquet")
    assert raw["next_state_id"].null_count() == raw.height == raw["stuck"].null_count()
    solver = StreamSolver(RuleSet(tiles=16, objective="score"))
    want = pl.concat(
        pl.DataFrame(
            {
                "state_id": b.policy["state_id"],
                "roll": b.policy["roll"].astype("int16"),
                "stuck": b.policy["stuck"],
                "next_state_id": pl.Series(b.policy["next_state_id"].filled(0)).set(
                    pl.Series(b.policy["stuck"]), None
                ),
            }
        )
        for b in solver.batches(policy=True)
    ).sort("state_id", "roll")
    keys = ["state_id", "roll", "stuck", "next_state_id"]
    polars_rows = tables.read_table(tmp_path, "policy", name).select(keys).sort(keys[:2])
    assert polars_rows.equals(want)
    con = sql.connect(tmp_path)
    try:
        view_rows = con.sql(f"select {', '.join(keys)} from policy order by 1, 2").pl()
    finally:
        con.close()
    assert view_rows.equals(want)
    # issue 26: `kind` is not stored either; readers say `end` for a stuck roll, else `move`
    assert raw["kind"].null_count() == raw.height
    want_kind = want.select(
        keys[:2], kind=pl.when(pl.col("stuck")).then(pl.lit("end")).otherwise(pl.lit("move"))
    )
    polars_kind = tables.read_table(tmp_path, "policy", name).select(*keys[:2], "kind")
    assert polars_kind.sort(keys[:2]).equals(want_kind)
    con = sql.connect(tmp_path)
    try:
        view_kind = con.sql("select state_id, roll, kind from policy order by 1, 2").pl()
    finally:
        con.close()
    assert view_kind.equals(want_kind)
    assert cli(["verify", "-d", tmp_path]).code == 0


def test_a_box_that_moved_to_its_own_files_leaves_the_shared_tables(
    tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 14-tile box built when boxes of that size still went into the shared tables, then
    rebuilt into files of its own: its old shared rows go in the same build (a reader of the
    union never sees it twice), the other variants' rows stay, verify holds."""
    from pipeline.games.shutbox import custom

    name = "stb-14t-2d6-score"
    monkeypatch.setattr(custom, "SEPARATE_TILES", 16)  # as before this pass
    assert cli(["build", "--variant", "classic", "-d", tmp_path]).code == 0
    assert cli(["build", "--tiles", "14", "--objective", "score", "-d", tmp_path]).code == 0
    shared = pl.read_parquet(tmp_path / "policy.parquet")
    assert set(shared["variant"]) == {"classic", name}
    monkeypatch.setattr(custom, "SEPARATE_TILES", 13)
    rebuilt = cli(["build", "--tiles", "14", "--objective", "score", "--force", "-d", tmp_path])
    assert rebuilt.code == 0, rebuilt.stderr
    for table in ("states", "policy", "edges", "moves", "reach", "node_reach"):
        left = pl.read_parquet(tmp_path / f"{table}.parquet")
        assert set(left["variant"]) == {"classic"}, table
    union = tables.read_table(tmp_path, "policy")  # every file of the table, read as one
    before = shared.filter(pl.col("variant") == name).height
    assert dict(union.group_by("variant").len().rows()) == {"classic": 5621, name: before}
    assert cli(["verify", "-d", tmp_path]).code == 0
