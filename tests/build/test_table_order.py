"""The tables a person opens first (issue 16): the start state's rows come first, then by state,
and a roll with no legal move is labelled in `kind` instead of showing bare NULLs."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest


@pytest.mark.parametrize("table", ["states", "edges", "policy", "moves", "reach", "node_reach"])
def test_each_variant_opens_with_its_start_state(built: Path, table: str) -> None:
    frame = pl.read_parquet(built / f"{table}.parquet").filter(pl.col("variant") == "classic")
    assert frame["state_id"][0] == 511  # the full 9-tile box
    rest = frame.filter(pl.col("state_id") != 511)
    if "strategy" in frame.columns:
        rest = rest.filter(pl.col("strategy") == "optimal")
    assert rest["state_id"].is_sorted()


def test_rows_without_a_move_are_labelled(built: Path) -> None:
    policy = pl.read_parquet(built / "policy.parquet")
    assert policy["kind"].null_count() == 0
    stuck = policy.filter(pl.col("best_move").is_null())
    assert set(stuck["kind"]) <= {"end", "pass"} and stuck.height > 0
    assert (policy["kind"] == "move").sum() == policy["best_move"].is_not_null().sum()
    # two players: a player stuck hands the turn over (seed 002's game)
    two = stuck.filter(pl.col("variant") == "two-player")
    assert set(two["kind"]) == {"end", "pass"}
    edges = pl.read_parquet(built / "edges.parquet")
    assert edges["kind"].null_count() == 0
    assert set(edges.filter(pl.col("move").is_null())["kind"]) == {"end", "pass"}
    reach = pl.read_parquet(built / "node_reach.parquet").filter(pl.col("variant") == "classic")
    assert set(reach.filter(pl.col("strategy") == "random")["kind"]) == {"move", "mixed", "end"}
