"""Knucklebones built without a graph (issue 17): `build` of a board stored on its own runs the
exact solver (games/knucklebones/exact/stream.py) and must write the graph build's tables: the same
columns and types, the same rows in the same order, the same integers and texts (ids, labels,
tie counts), values within 1e-9 (the solver's bound is 1e-13).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from pipeline.games.knucklebones.exact import stream
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.games.registry import REGISTRY
from pipeline.stages import build as stages
from pipeline.store import stream_writer, tables
from pipeline.store.footers import file_rules

TABLES = ("states", "policy", "moves", "edges")


def build(tmp: Path, name: str, streamed: bool) -> Path:
    """Build ``name`` with every table, on the streamed path (stored on its own) or the graph's
    (in the shared files); returns the data directory."""
    data = tmp / ("streamed" if streamed else "graph")
    variant = dataclasses.replace(REGISTRY[name], separate=streamed)
    [report] = stages.run([variant], stages.STAGES, data, extra_tables=("moves", "edges"))
    assert ("without a graph" in report.note) == streamed
    return data


@pytest.mark.parametrize("name", ["knucklebones-2x2", "knucklebones-2x2-score"])
def test_streamed_tables_equal_the_graph_build(tmp_path: Path, name: str) -> None:
    graph, streamed = build(tmp_path, name, False), build(tmp_path, name, True)
    assert (streamed / "variants" / name / "policy.parquet").exists()
    for table in TABLES:
        old = tables.read_table(graph, table, name)
        new = tables.read_table(streamed, table, name)
        assert new.schema == old.schema, table
        assert new.height == old.height > 0, table
        for column in old.columns:
            a, b = old[column], new[column]
            if column == "residual":  # each solver's own bound (checked below)
                continue
            if a.dtype == pl.Float64:
                np.testing.assert_allclose(b.to_numpy(), a.to_numpy(), rtol=0, atol=1e-9)
            else:
                assert b.equals(a), f"{table}.{column} differs"
    states = tables.read_table(streamed, "states", name)
    # twice the solver's bound on |value - exact| bounds |value - its Bellman recomputation|
    assert 0 < states["residual"].max() <= 2 * stream.BUILD_TOLERANCE


def test_streamed_values_are_the_exact_solvers(tmp_path: Path) -> None:
    # The graph build's values are within 1e-12 of the exact ones; the streamed within 1e-13.
    from pipeline.games.knucklebones.exact import cpu as exact

    data = build(tmp_path, "knucklebones-2x2", True)
    value = tables.read_table(data, "states", "knucklebones-2x2").sort("state_id")["value"]
    tight = exact.solve(KnuckleRules(2, 2), tol=1e-14)
    np.testing.assert_allclose(value.to_numpy(), tight.value, rtol=0, atol=1e-13 + 1e-14)


@pytest.fixture
def separate_2x2(monkeypatch: pytest.MonkeyPatch) -> str:
    """knucklebones-2x2 stored on its own (as the big boards are), so `build` streams it."""
    name = "knucklebones-2x2"
    variant = dataclasses.replace(REGISTRY[name], separate=True)
    monkeypatch.setitem(REGISTRY._load(), name, variant)
    return name


def test_cli_build_streams_states_and_policy_and_verifies(
    tmp_path: Path, cli: Callable, separate_2x2: str
) -> None:
    result = cli(["build", "--variant", separate_2x2, "-d", tmp_path])
    assert result.code == 0, result.stderr
    assert "solved without a graph" in result.stdout
    assert "moves and edges skipped" in result.stdout
    own = tmp_path / "variants" / separate_2x2
    # (and the one-shot `expect`'s lookup of its states: pipeline.store.lookup)
    assert sorted(p.name for p in own.iterdir()) == [
        "policy.parquet",
        "states.lookup",
        "states.parquet",
    ]
    assert "0.571747648" in result.stdout  # docs/variants.md: 2x2 starts at 0.5717476480
    rules = file_rules(tmp_path / "variants" / separate_2x2 / "states.parquet")
    assert rules == {separate_2x2: KnuckleRules(2, 2).to_dict()}
    assert cli(["verify", "-d", tmp_path]).code == 0
    again = cli(
        ["build", "--variant", separate_2x2, "--moves", "--edges", "--force", "-d", tmp_path]
    )
    assert again.code == 0, again.stderr
    tables = sorted(p.name for p in own.iterdir() if p.name != "states.lookup")
    assert tables == [f"{t}.parquet" for t in sorted(TABLES)]
    checked = cli(["verify", "-d", tmp_path])
    assert checked.code == 0, checked.stdout
    assert "contracts/bellman: 127,765 rows checked, 0 violations" in checked.stdout


def test_the_full_game_is_refused_in_one_line(tmp_path: Path, cli: Callable) -> None:
    result = cli(["build", "--variant", "knucklebones", "-d", tmp_path])
    assert result.code == 2
    assert result.stderr.count("\n") == 1 and "solve-exact" in result.stderr


@pytest.mark.parametrize("rules", [KnuckleRules(2, 2), KnuckleRules(3, 2, 4), KnuckleRules(1, 4)])
def test_compiled_board_texts_equal_the_games(rules: KnuckleRules) -> None:
    game = Knucklebones(rules)
    pos = game.positions[:: max(1, game.n_states // 20_000)]
    fast = stream.board_texts(game, pos)
    assert fast.type == pa.string()
    assert fast.to_pylist() == game.board_texts(pos).to_list()


def test_record_batch_takes_arrow_arrays_and_casts_them() -> None:
    schema = pa.schema([("move", pa.list_(pa.int8())), ("tiles", pa.string()), ("n", pa.int64())])
    moves = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), pa.array([1, 3], pa.int8()))
    texts = pa.array(["a;b", "c;d"], pa.large_string())
    batch = stream_writer.record_batch(
        {"move": moves, "tiles": texts, "n": np.array([4, 5])}, schema, {}
    )
    assert batch.schema == schema
    assert batch.to_pylist() == [
        {"move": [1], "tiles": "a;b", "n": 4},
        {"move": [3], "tiles": "c;d", "n": 5},
    ]
