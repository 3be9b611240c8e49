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


def _sorted_reference(frame: pl.DataFrame, start: int) -> pl.DataFrame:
    """The order start_first promises, by a plain stable sort."""
    keys = [pl.col("state_id") != start, "state_id"]
    if "strategy" in frame.columns:
        rank = {name: i for i, name in enumerate(frame["strategy"].unique(maintain_order=True))}
        keys.insert(0, pl.col("strategy").replace_strict(rank, return_dtype=pl.Int32))
    return frame.sort(keys, maintain_order=True)


@pytest.mark.parametrize(
    "ids",
    [
        [0, 1, 1, 2, 5, 5, 7],  # by state, the start (5) in the middle: its block moves
        [5, 5, 0, 1, 2, 7],  # already in order
        [7, 5, 1, 5, 0, 2, 2],  # no order: sorted
        [1, 2, 3],  # no start state rows
        [5],
        [],
    ],
)
@pytest.mark.parametrize("strategies", [None, ["optimal", "greedy"]])
def test_start_first_equals_a_stable_sort(ids: list[int], strategies: list[str] | None) -> None:
    from pipeline.stages.frames import start_first

    frame = pl.DataFrame({"state_id": pl.Series(ids, dtype=pl.Int64)}).with_row_index("row")
    if strategies is not None:  # each strategy's rows in a block, optimal first
        frame = pl.concat(
            [frame.with_columns(strategy=pl.lit(name)) for name in strategies]
        ).select("strategy", pl.exclude("strategy"))
    got = start_first(frame, 5)
    assert got.equals(_sorted_reference(frame, 5))
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=3)
    assert start_first(shuffled, 5).equals(_sorted_reference(shuffled, 5))


def test_strategies_in_blocks_or_mixed_keep_their_first_seen_order() -> None:
    from pipeline.stages.frames import start_first

    blocks = pl.DataFrame({"strategy": ["b", "b", "a", "a"], "state_id": [9, 5, 5, 1]})
    assert start_first(blocks, 5)["state_id"].to_list() == [5, 9, 5, 1]
    mixed = pl.DataFrame({"strategy": ["b", "a", "b", "a"], "state_id": [9, 1, 5, 5]})
    assert start_first(mixed, 5).rows() == [("b", 5), ("b", 9), ("a", 5), ("a", 1)]


def test_the_docs_say_where_an_nplayer_game_of_its_own_starts(built_more: Path) -> None:
    """Issue 41: docs/tables.md said each variant's start state comes first, but an N-player
    game in files of its own is written block by block, the last seat's first (its start
    state is solved last). The docs now name it among the tables that keep the solver's order."""
    from pipeline.games.registry import get_variant
    from tests.conftest import REPO

    start = get_variant("four-player").make().start_state()
    states = pl.read_parquet(built_more / "variants" / "four-player" / "states.parquet")
    assert states["state_id"][0] != start and states["state_id"][-512:].to_list().count(start) == 1
    assert states["player"][0] == 4  # the last seat's block first
    for doc in ("docs/tables.md", "data/README.md", "README.md"):
        text = " ".join((REPO / doc).read_text().split())
        assert "N-player games stored on their own" in text, doc
