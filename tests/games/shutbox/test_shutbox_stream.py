"""The streamed solver (games/shutbox_stream.py) against the graph solve, and its writer.

Cross-check: for every named one-player Shut the Box variant and twenty seeded random rule sets,
the streamed values, dice choices, best moves, n_optimal, moves (values, regrets) and edges equal
those of ``ShutTheBox(rules).graph()`` solved by ``solve_rank_order`` and ``best_moves``.
Published numbers: seed 000 (000_9b8fddd618491a4c.txt, "True probability 7.143", exactly
466473281/6530347008 by the exact solve) and seed 003 (003_d76d08da6ac0702b.txt, the Lever Box,
P = 0.0976137161704).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.errors import UsageError
from pipeline.games.registry import REGISTRY
from pipeline.games.shutbox.game import RuleSet, ShutTheBox
from pipeline.games.shutbox.stream import (
    StreamSolver,
    parquet_options,
    schemas,
    state_constants,
)
from pipeline.graph import Graph
from pipeline.solve.rank_order import Solution, best_moves, solve_rank_order
from pipeline.store.stream_writer import write_streamed_many
from tests.support.tables import write_streamed

TOL = 1e-12
NAMED = sorted(
    name for name, v in REGISTRY.items() if isinstance(v.make(), ShutTheBox) and v.make()
)


def random_rules(count: int, seed: int = 14) -> list[RuleSet]:
    """``count`` valid random rule sets (small boxes), the same ones on every run."""
    rng = random.Random(seed)
    out: list[RuleSet] = []
    while len(out) < count:
        tiles, dice, sides = rng.randint(1, 11), rng.randint(1, 3), rng.randint(2, 8)
        mode = rng.choice(["never", "forced", "optional"]) if dice > 1 else "never"
        cond_sum = rng.choice([None, rng.randint(1, 12)]) if mode != "never" else None
        shut = tuple(rng.sample(range(1, tiles + 1), rng.randint(0, min(3, tiles))))
        shut = shut if mode != "never" and (cond_sum is None or rng.random() < 0.5) else ()
        objective = rng.choice(["shut", "score", "target"])
        scoring = rng.choice(["sum", "digital"]) if tiles <= 9 else "sum"
        try:
            rules = RuleSet(
                tiles=tiles,
                dice=dice,
                sides=sides,
                one_die=mode,
                one_die_sum=cond_sum,
                one_die_shut=shut,
                objective=objective,
                target=rng.randint(0, 20) if objective == "target" else None,
                max_per_move=rng.choice([None, None, 1, 2, 3]),
                scoring=scoring,
            )
        except UsageError:
            continue
        out.append(rules)
    return out


@dataclass
class Reference:
    """The graph solve of a rule set."""

    g: Graph
    sol: Solution
    best: np.ndarray
    n_optimal: np.ndarray


def reference(rules: RuleSet) -> Reference:
    """Today's solve: the whole graph, rank order, best moves."""
    g = ShutTheBox(rules).graph()
    sol = solve_rank_order(g)
    best, n_optimal = best_moves(g, sol)
    return Reference(g, sol, best, n_optimal)


def streamed(rules: RuleSet, batch_rows: int = 1 << 20) -> tuple[StreamSolver, dict]:
    """Every streamed table of a rule set, batches concatenated."""
    solver = StreamSolver(rules)
    batches = list(solver.batches(policy=True, regrets=True, edges=True, batch_rows=batch_rows))
    out = {}
    for table in ("states", "policy", "moves", "edges"):
        parts = [getattr(b, table) for b in batches]
        out[table] = {k: np.ma.concatenate([p[k] for p in parts]) for k in parts[0]}
    return solver, out


def close(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal within the tie tolerance, relative to the size of the values."""
    return bool(np.all(np.abs(a - b) <= TOL * np.maximum(1.0, np.abs(b))))


def check_same(rules: RuleSet, batch_rows: int = 1 << 20) -> None:
    """Assert the streamed tables equal the graph solve's."""
    ref = reference(rules)
    g, sol = ref.g, ref.sol
    solver, t = streamed(rules, batch_rows)
    st, po = t["states"], t["policy"]
    assert np.array_equal(st["state_id"], g.state_id)  # same (rank, id) order
    assert close(st["value"], sol.value)
    assert close(solver.value[g.state_id], sol.value)
    assert np.array_equal(st["dice"].filled(-1), sol.choice)
    assert np.array_equal(st["choice_options"], sol.n_choices)
    label = g.mv_label[ref.best]
    assert np.array_equal(po["state_id"], g.state_id[g.node_state])
    assert np.array_equal(po["roll"], g.node_roll)
    assert np.array_equal(po["best_move_mask"].filled(-1), label)
    assert np.array_equal(po["n_optimal"], np.where(label < 0, 0, ref.n_optimal))
    assert close(po["value"], sol.node_value)
    legal = np.flatnonzero(g.mv_label >= 0)
    assert np.array_equal(po["n_moves"], np.bincount(g.mv_node[legal], minlength=len(label)))
    check_moves(ref, t["moves"], legal)
    check_edges(ref, t["edges"])
    assert solver.moves == legal.shape[0]
    assert solver.nodes == g.node_state.shape[0]


def check_moves(ref: Reference, mv: dict, legal: np.ndarray) -> None:
    """The moves table: every legal move in node order, its value, regret and best mark."""
    g, sol = ref.g, ref.sol
    assert np.array_equal(mv["move_mask"], g.mv_label[legal])
    assert np.array_equal(mv["next_state_id"], g.state_id[g.mv_dst[legal]])
    assert close(mv["value"], sol.move_value[legal])
    regret = (sol.node_value[g.mv_node[legal]] - sol.move_value[legal]) * (1 if g.maximise else -1)
    assert close(mv["regret"], np.maximum(regret, 0.0))
    is_best = np.zeros(g.mv_node.shape[0], dtype=bool)
    is_best[ref.best] = True
    assert np.array_equal(mv["is_best"], is_best[legal])


def check_edges(ref: Reference, ed: dict) -> None:
    """The edges table: one row per (chance row, move), pass rows included, in graph order."""
    g = ref.g
    starts = g.move_starts()
    count = starts[g.ch_node + 1] - starts[g.ch_node]
    rows = np.repeat(np.arange(g.ch_state.shape[0]), count)
    mv = np.repeat(starts[g.ch_node], count) + (
        np.arange(rows.shape[0]) - np.repeat(np.cumsum(count) - count, count)
    )
    assert np.array_equal(ed["state_id"], g.state_id[g.ch_state[rows]])
    assert np.array_equal(ed["dice"], g.ch_choice[rows])
    assert np.array_equal(ed["roll"], g.node_roll[g.ch_node[rows]])
    assert np.array_equal(ed["prob"], g.ch_prob[rows])
    assert np.array_equal(ed["move_mask"].filled(-1), g.mv_label[mv])
    dst = g.mv_dst[mv]
    assert np.array_equal(ed["next_state_id"].filled(-1), np.where(dst >= 0, g.state_id[dst], -1))
    assert np.array_equal(ed["reward"], g.mv_offset[mv])
    assert np.array_equal(ed["sign"], g.mv_scale[mv])


@pytest.mark.parametrize("name", NAMED)
def test_named_variants_match_the_graph_solve(name: str) -> None:
    game = REGISTRY[name].make()
    assert isinstance(game, ShutTheBox)
    check_same(game.r)


@pytest.mark.parametrize("rules", random_rules(20), ids=lambda r: r.slug())
def test_random_rule_sets_match_the_graph_solve(rules: RuleSet) -> None:
    check_same(rules)


def test_small_batches_give_the_same_rows() -> None:
    # chunks of a few states: layers split across many batches, same rows in the same order
    check_same(RuleSet(tiles=10, one_die="optional", one_die_sum=8), batch_rows=97)


@pytest.mark.parametrize(
    "rules",
    [RuleSet(tiles=6, dice=8, sides=20, objective="score"), RuleSet(tiles=5, dice=3, sides=20)],
    ids=["8d20-153-rolls", "3d20"],
)
def test_many_rolls_sum_like_the_graph_solve(rules: RuleSet) -> None:
    # over 129 rolls NumPy's pairwise sum splits in two; the kernel must split the same way
    check_same(rules)


def test_bigger_box_values_match() -> None:
    rules = RuleSet(tiles=14, dice=3, objective="score", max_per_move=3)
    ref = reference(rules)
    value = StreamSolver(rules).solve()
    assert close(value[ref.g.state_id], ref.sol.value)


def test_classic_start_is_seed_000s_probability() -> None:
    # seed 000_9b8fddd618491a4c.txt: "True probability 7.143"; exactly 466473281/6530347008
    value = StreamSolver(RuleSet()).solve()[511]
    assert value == pytest.approx(466473281 / 6530347008, abs=TOL)
    assert round(100 * value, 3) == 7.143


def test_lever_start_is_seed_003s_probability() -> None:
    # seed 003_d76d08da6ac0702b.txt: P(000000000) ~ 0.0976137161704 (one die by choice once
    # 7, 8 and 9 are shut)
    value = StreamSolver(RuleSet(one_die="optional", one_die_shut=(7, 8, 9))).solve()[511]
    assert value == pytest.approx(0.0976137161704, abs=TOL)


@pytest.mark.parametrize("name", ["classic", "lever", "digital-score", "twelve-tiles"])
def test_frames_equal_todays_states_and_policy_rows(name: str) -> None:
    # the describing adapters give today's rows, columns and dtypes from streamed batches
    from polars.testing import assert_frame_equal

    from pipeline.games.solved import Solved
    from pipeline.stages.frames import policy_rows, state_rows
    from tests.support.shutbox_frames import policy_frame, states_frame

    variant = REGISTRY[name]
    game = variant.make()
    assert isinstance(game, ShutTheBox)
    solved = Solved(variant, game, game.graph())
    policy, _ = policy_rows(solved, with_moves=False)
    batches = list(StreamSolver(game.r).batches(batch_rows=700))
    maximise = game.r.objective != "score"
    states = pl.concat([states_frame(game, b.states, game.objective, maximise) for b in batches])
    streamed_policy = pl.concat([policy_frame(game, b.policy) for b in batches if b.policy])
    tol = {"check_exact": False, "rel_tol": TOL, "abs_tol": TOL}
    assert_frame_equal(state_rows(solved, with_values=True), states, **tol)
    assert isinstance(policy, pl.DataFrame)
    assert_frame_equal(policy, streamed_policy, **tol)


# -- the writer --------------------------------------------------------------------------------


def write_lever(data: Path) -> dict[str, int]:
    """Stream the lever box's four tables into ``data``."""
    rules = RuleSet(one_die="optional", one_die_shut=(7, 8, 9))
    solver = StreamSolver(rules)
    sch = schemas()
    paths = {name: data / f"{name}.parquet" for name in sch}
    constants = {name: {"variant": "lever"} for name in sch}
    constants["states"] = state_constants(rules, "lever")
    batches = solver.batches(policy=True, regrets=True, edges=True, batch_rows=500)
    return write_streamed_many(paths, batches, sch, constants, parquet_options())


def test_written_tables_read_back_in_duckdb_and_polars(tmp_path: Path) -> None:
    rows = write_lever(tmp_path)
    assert rows == {"states": 512, "policy": 5684, "moves": 7136, "edges": 9122}
    start = duckdb.sql(
        f"select value, dice from '{tmp_path / 'states.parquet'}' where state_id = 511"
    ).fetchall()
    assert start[0][0] == pytest.approx(0.0976137161704, abs=TOL)
    policy = pl.read_parquet(tmp_path / "policy.parquet")
    assert policy.height == 5684 and policy["variant"].unique().to_list() == ["lever"]
    stuck = policy.filter(pl.col("stuck"))
    assert stuck["best_move_mask"].null_count() == stuck.height
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"{n}.parquet" for n in ("edges", "moves", "policy", "states")
    ]


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_failed_write_leaves_no_temporary_file(tmp_path: Path, error: type) -> None:
    path = tmp_path / "policy.parquet"
    path.write_bytes(b"old")
    solver = StreamSolver(RuleSet())

    def failing() -> object:
        for i, batch in enumerate(solver.batches(batch_rows=300)):
            if i == 3:
                raise error("stop")
            yield batch.policy

    sch = schemas(with_variant=False)["policy"]
    with pytest.raises(error):
        write_streamed(path, failing(), sch)
    assert [p.name for p in tmp_path.iterdir()] == ["policy.parquet"]
    assert path.read_bytes() == b"old"


def test_write_streamed_one_table_in_row_groups(tmp_path: Path) -> None:
    path = tmp_path / "states.parquet"
    rules = RuleSet(tiles=12)
    batches = (b.states for b in StreamSolver(rules).batches(policy=False, batch_rows=1000))
    n = write_streamed(path, batches, schemas()["states"], state_constants(rules, "twelve"))
    assert n == 4096 == pq.ParquetFile(path).metadata.num_rows


def test_constant_string_column_reads_back_as_string_with_metadata(tmp_path: Path) -> None:
    path = tmp_path / "policy.parquet"
    schema = schemas()["policy"].with_metadata({b"stb.rules": b'{"x": 1}'})
    batches = (b.policy for b in StreamSolver(RuleSet(tiles=6, dice=1)).batches())
    write_streamed(path, batches, schema, {"variant": "six"})
    assert pq.read_schema(path).field("variant").type == pa.string()
    assert pq.read_schema(path).metadata == {b"stb.rules": b'{"x": 1}'}
    frame = pl.read_parquet(path)
    assert frame.schema["variant"] == pl.String and frame["variant"].unique().to_list() == ["six"]
    assert frame.schema["roll"] == pl.Int16


def test_error_in_the_writer_thread_reaches_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "policy.parquet"
    bad = {"state_id": np.array(["not a number"])}  # fails converting, in the writer's thread
    schema = schemas(with_variant=False)["states"]
    with pytest.raises((ValueError, TypeError, pa.ArrowException)):
        write_streamed(path, iter([bad]), schema)
    assert list(tmp_path.iterdir()) == []


def test_the_build_leaves_out_exactly_the_columns_readers_derive() -> None:
    """The streamed policy's DERIVED_POLICY (games layer) plus `kind`, which it never writes,
    and schema.DERIVED (store layer, what readers fill in) name the same columns."""
    from pipeline.games.shutbox.stream import DERIVED_POLICY, schemas
    from pipeline.store.schema import DERIVED

    assert "kind" not in schemas()["policy"].names
    assert {*DERIVED_POLICY, "kind"} == set(DERIVED["policy"])


def test_a_misnamed_batch_column_is_refused_not_written_as_nulls(tmp_path: Path) -> None:
    # a batch column the schema lacks (a typo) used to vanish, leaving its column null
    schema = pa.schema([("state_id", pa.int64()), ("value", pa.float64())])
    batch = {"state_id": np.arange(3), "valeu": np.zeros(3)}
    with pytest.raises(ValueError, match="valeu"):
        write_streamed(tmp_path / "t.parquet", [batch], schema)
    assert not list(tmp_path.iterdir())  # nothing half-written is left
    # the same options twice: pyarrow must not be handed a dict it changed the first time
    options = {
        "use_dictionary": False,
        "column_encoding": {"state_id": "DELTA_BINARY_PACKED"},
        "use_byte_stream_split": ["value"],
    }
    for name in ("a.parquet", "b.parquet"):
        good = {"state_id": np.arange(3), "value": np.zeros(3)}
        assert write_streamed(tmp_path / name, [good], schema, options=options) == 3
