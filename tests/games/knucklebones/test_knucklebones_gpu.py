"""The GPU solver (issue 23): its kernels under numba's CUDA simulator against the CPU solver,
the lean full-game table on a small board, and the one-line refusals.

The simulator must be switched on before numba is imported, so the kernels run in a process of
their own (tests/support/knucklebones_gpu_sim.py: every simulated check in one run, about half a
minute). A real GPU is needed only by the last test, which skips without one.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.games.knucklebones.exact import gpu
from tests.conftest import REPO, invoke
from tests.support.ci import cannot_run
from tests.support.knucklebones_lean import copy_lean, write_lean, write_lean_pair


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The findings of tests/support/knucklebones_gpu_sim.py under the CUDA simulator."""
    out = tmp_path_factory.mktemp("gpu-sim")
    # polars, duckdb and matplotlib refused at first, as on a GPU machine (issue 31)
    without = REPO / "tests" / "support" / "without"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": f"{without}{os.pathsep}{REPO}"}
    env.pop("STB_WITHOUT", None)
    run = subprocess.run(
        [sys.executable, "-m", "tests.support.knucklebones_gpu_sim", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def lean_2x2_d6(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both objectives' lean tables of the 2x2 board with a d6 (kb-lean, kb-lean-score), solved
    and written once for the tests below, which each take a copy of their own
    (:func:`copy_lean`: the same files, the catalog refreshed for the copy's place)."""
    from pipeline.games.knucklebones.game import KnuckleRules

    data = tmp_path_factory.mktemp("lean-2x2-d6") / "data"
    write_lean_pair(data, "kb-lean", KnuckleRules(2, 2, 6))
    return data


@pytest.mark.parametrize(
    "board", ["2x2-d2-wins-float64", "2x2-d3-score-float64", "2x2-d3-wins-float32"]
)
def test_kernels_equal_the_cpu_solver_on_every_state(sim: dict[str, Any], board: str) -> None:
    # both solvers prove every value within the tolerance of the exact one, so they differ by
    # at most twice that (float32: plus its rounding, below 1e-7 for values in [0, 1])
    found = sim[board]
    assert sim["simulated"] and found["bound"] <= found["tolerance"]
    assert found["max_diff"] <= 2 * found["tolerance"] + (1e-7 if "float32" in board else 0)


def test_build_device_cuda_writes_the_lean_tables(sim: dict[str, Any]) -> None:
    # `build --device cuda` of both objectives through the full game's path, on 2x2 with a d3
    lean = sim["lean"]
    assert lean["files"] == ["kb-sim-2x2-d3", "kb-sim-2x2-d3-score"]
    assert lean["tables"] == ["decisions.parquet", "states.parquet"]
    assert lean["decision_kinds"] == ["opening", "sample"]
    # every data contract holds on the lean tables (the schema one reads their declared columns)
    assert lean["verify"][0] == 0, lean["verify"][1]
    assert lean["rows"] == 1540 and lean["sorted"] and lean["float32"]
    # lean: the id, the value and its constants; what follows from the id is not written
    assert lean["columns"] == ["variant", "state_id", "objective", "maximise", "value", "residual"]
    assert lean["ranges"][0][0] == 0 and lean["ranges"][-1][1] == 1539  # row group statistics
    assert lean["max_diff"] <= lean["residual"] / 2
    # the query answers from state 0 of both tables; the sampled Bellman check holds
    rows = list(csv.DictReader(io.StringIO(lean["first_player"])))  # DuckDB alone: Arrow's CSV
    row = next(r for r in rows if r["wins_variant"] == "kb-sim-2x2-d3")
    assert abs(float(row["first_player_win"]) - lean["start_cpu"]) <= lean["residual"] / 2
    assert lean["check_tables"][0] == 0 and "ok:" in lean["check_tables"][1]


def test_the_gpu_path_runs_without_polars_duckdb_or_matplotlib(sim: dict[str, Any]) -> None:
    """Issue 31: a GPU machine has numpy, numba, numba-cuda, pyarrow, typer, rich and filelock
    only. With polars, duckdb and matplotlib refused (ModuleNotFoundError), `knucklebones
    solve-exact` runs on each device, the full game's build path (lean states, decisions, the
    manifest), `check-tables` and a lookup too, and none of them is imported; the answers are
    this (normal) process's."""
    from pipeline.games.knucklebones.exact import cpu as exact
    from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
    from pipeline.games.knucklebones.players import decisions as sample

    without = sim["without"]
    assert sim["refused_at_start"] and without["refused_at_end"] and without["loaded"] == []
    queried = set(without["query_loaded"])  # the query: DuckDB without polars
    assert queried & {"duckdb", "_duckdb"} and not queried & {"polars", "matplotlib"}
    board = ["--columns", "2", "--rows", "1", "--faces", "2"]
    normal = invoke(["knucklebones", "solve-exact", *board])
    start = exact.solve(KnuckleRules(2, 1, 2), tol=1e-12).value[0]
    assert normal.code == 0 and f"start value {start:.10f} (wins), 28 positions" in normal.stdout
    for device, where in (("cpu", "in this process"), ("cuda", "on the GPU")):
        code, said = sim[f"solve_exact_{device}"]
        assert code == 0 and f"start value {start:.10f} (wins), 28 positions" in said, said
        assert f"float64 bounds {where}" in said
    # the lean tables the build wrote there hold this process's values and decisions
    import pyarrow.parquet as pq

    data = Path(sim["lean"]["data"])
    for suffix, objective in (("", "wins"), ("-score", "score")):
        rules = KnuckleRules(2, 2, 3, objective)
        states = pq.read_table(data / "variants" / f"kb-sim-2x2-d3{suffix}" / "states.parquet")
        values = exact.solve(rules, tol=1e-12).value[states["state_id"].to_numpy()]
        residual = states["residual"][0].as_py()
        assert np.abs(states["value"].to_numpy() - values).max() <= residual / 2
    written = pq.read_table(data / "variants" / "kb-sim-2x2-d3" / "decisions.parquet")
    game = Knucklebones(KnuckleRules(2, 2, 3))
    found = [*sample.opening_decisions(game), *sample.sample_decisions(game)]
    expected = [
        (game.state_of(d.pairs), d.die, col + 1, game.state_of(after))
        for d in found
        for col, after in game.successors(d.pairs, d.die)
    ]  # the players' picks aside: searching them here would double the test's time
    columns = ("state_id", "roll", "column_number", "next_state_id")
    assert list(zip(*(written[c].to_pylist() for c in columns), strict=True)) == expected
    code, looked = without["lookup"]
    assert code == 0 and "yes (from tables)" in looked, looked
    # without DuckDB the build writes the tables and no catalog; verify says so (exit 3), and
    # `verify --fix`, where DuckDB is, writes it
    code, said = without["catalog_before_fix"]
    assert code == 3 and "catalog stb.duckdb" in said, said
    assert (data / "stb.duckdb").is_file()


def test_no_numba_cuda_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu, "_has_numba_cuda", lambda: False)
    r = invoke(["knucklebones", "solve-exact", "--rows", "2", "--columns", "2", "--device", "cuda"])
    assert r.code == 2 and "pip install '.[gpu]'" in r.stderr and "--device cpu" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_no_gpu_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu, "_gpu_available", lambda cuda: False)
    r = invoke(["knucklebones", "solve-exact", "--rows", "2", "--columns", "2", "--device", "cuda"])
    assert r.code == 2 and "no CUDA GPU" in r.stderr and "--device cpu" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("free_gb", "tol", "dtype", "says"),
    [
        (100.0, 1e-11, np.float64, None),
        (60.0, 1e-6, np.float32, None),
        (60.0, 1e-11, None, "pass --tolerance 1e-06"),
        (30.0, 1e-6, None, "need 77.5 GB of float64 bounds or 39.0 GB of float32"),
    ],
)
def test_full_game_memory_picks_float64_float32_or_refuses(
    free_gb: float, tol: float, dtype: type | None, says: str | None
) -> None:
    from pipeline.errors import UsageError

    n = 4_812_987_894  # the full game's positions (C(3,069, 3))
    if says is None:
        assert gpu.pick_dtype(n, tol, free_gb * 1e9) == dtype
    else:
        with pytest.raises(UsageError, match=says.replace(".", r"\.").replace("(", r"\(")):
            gpu.pick_dtype(n, tol, free_gb * 1e9)


def test_too_small_gpu_is_refused_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = type("FakeCuda", (), {})()
    monkeypatch.setattr(gpu, "cuda_module", lambda: fake)
    monkeypatch.setattr(gpu, "free_memory", lambda cuda: 1e6)
    monkeypatch.setattr(gpu, "kernels", lambda c, f: pytest.fail("no kernel may be compiled"))
    r = invoke(["knucklebones", "solve-exact", "--rows", "2", "--columns", "2", "--device", "cuda"])
    assert r.code == 2 and "GB free" in r.stderr and "GB of float64" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_build_device_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    graph = invoke(["build", "--variant", "knucklebones-2x2", "--device", "cuda", "-d", data])
    assert graph.code == 2 and "built on the CPU" in graph.stderr
    bad = invoke(["build", "--variant", "knucklebones-2x3", "--device", "tpu", "-d", data])
    assert bad.code == 2 and "--device must be" in bad.stderr
    cpu_full = invoke(["build", "--variant", "knucklebones", "-d", data])
    assert cpu_full.code == 2 and "--device cuda" in cpu_full.stderr
    monkeypatch.setattr(gpu, "_has_numba_cuda", lambda: False)
    full = invoke(["build", "--variant", "knucklebones", "--device", "cuda", "-d", data])
    assert full.code == 2 and "pip install" in full.stderr
    assert not list(data.glob("variants/*")) if data.exists() else True


def test_real_gpu_equals_the_cpu_on_2x2() -> None:
    if gpu.simulated() or not gpu._has_numba_cuda():
        pytest.skip("needs numba-cuda and a CUDA GPU (the simulator tests cover the kernels)")
    from numba import cuda

    if not gpu._gpu_available(cuda):
        pytest.skip("needs a CUDA GPU: none on this machine")
    from pipeline.games.knucklebones.exact import cpu as exact
    from pipeline.games.knucklebones.game import KnuckleRules

    for objective in ("wins", "score"):
        rules = KnuckleRules(2, 2, 6, objective)
        g = gpu.solve(rules, tol=1e-11)
        c = exact.solve(rules, tol=1e-11)
        assert np.abs(g.values(0, g.n_states) - c.value).max() <= 2e-11


def test_lookups_in_the_lean_tables_are_the_solvers_values(tmp_path: Path) -> None:
    from pipeline.answer.answers import Answers, for_dir
    from pipeline.apps.knucklebones import position
    from pipeline.games.knucklebones.exact import cpu as exact
    from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
    from pipeline.games.registry import get_variant
    from pipeline.solve.tolerance import is_tie
    from pipeline.store.states import PagedStates

    data = tmp_path / "data"
    for objective in ("wins", "score"):
        write_lean(data, f"kb-lean-{objective}", KnuckleRules(2, 2, 6, objective))
    # the 2x2 board stands in for the full game: its lean tables read a row group at a time
    a = position.solve("4_/__", "1_/__", 3, 2, "knucklebones-2x2", data)
    assert a.exact and a.depth is None and a.tables == ("kb-lean-wins", "kb-lean-score")
    assert all(isinstance(for_dir(data).index.sorted_states(n), PagedStates) for n in a.tables)
    # a handful of row groups (of 16,384 ids here: 8 a file), never the whole file: each file
    # opened once, then at most one group for the position and one for each column
    fresh = Answers(data)
    found = fresh.board(get_variant("knucklebones-2x2"), "4/_;1/_", 3)
    assert found.exact and 2 < fresh.index.reads <= 2 * (1 + 1 + len(found.columns)) < 2 * 9
    game = Knucklebones(KnuckleRules(2, 2, 6))
    pairs = game.pairs_of_boards([[4], []], [[1], []])
    wins = exact.solve(KnuckleRules(2, 2, 6, "wins")).value
    score = exact.solve(KnuckleRules(2, 2, 6, "score")).value
    assert a.win is not None and abs(a.win - wins[int(game.canonical(pairs[None, :])[0])]) <= 1e-7
    for cv in a.columns:
        after = pairs.copy()
        after[cv.column - 1] = game.t.place[after[cv.column - 1], 2]
        nxt = int(game.canonical(game.t.swap[after][None, :])[0])
        assert cv.win is not None and cv.diff is not None
        assert abs(cv.win - (1 - wins[nxt])) <= 1e-7  # float32 storage
        assert abs(cv.diff + score[nxt]) <= 1e-5
        assert cv.value == cv.win  # ranked by the variant's objective, the win chance
    best = a.best
    assert best is not None and best.best
    assert is_tie(best.win, max(c.win for c in a.columns if c.win is not None))
    shown = invoke(
        ["knucklebones", "solve", "4_/__", "1_/__", "3", "-v", "knucklebones-2x2", "-d", data]
    )
    assert (
        shown.code == 0 and "kb-lean-wins" in shown.stdout and "yes (from tables)" in shown.stdout
    )


def test_solve_says_when_one_objective_of_the_board_is_built(
    tmp_path: Path, lean_2x2_d6: Path
) -> None:
    # `build --variant knucklebones --device cuda` alone builds the wins table only: the answer
    # is exact in its objective, the score differences missing (shown as -), and solve says why
    from pipeline.apps.knucklebones import position

    data = tmp_path / "data"
    copy_lean(lean_2x2_d6, data, ("kb-lean",))  # write_lean of the wins objective alone
    args = ["knucklebones", "solve", "4_/__", "1_/__", "3", "-v", "knucklebones-2x2"]
    half = invoke([*args, "-d", data])
    assert half.code == 0, half.stderr
    assert "note: kb-lean is built but not its score objective" in half.stdout
    assert "yes (from tables)" in half.stdout and " - " in half.stdout
    a = position.solve("4_/__", "1_/__", 3, 2, "knucklebones-2x2", data)
    assert a.exact and a.tables == ("kb-lean",) and a.diff is None
    assert all(c.win is not None and c.diff is None for c in a.columns)
    # the score variant with only the wins table built: no table holds its values, searched
    other = position.solve("4_/__", "1_/__", 3, 2, "knucklebones-2x2-score", data)
    assert not other.exact and other.tables == () and other.depth == 2
    copy_lean(lean_2x2_d6, data, ("kb-lean-score",))  # and now its score objective
    both = invoke([*args, "-d", data])
    assert both.code == 0 and "note: kb-lean" not in both.stdout
    assert "yes (from tables)" in both.stdout and "kb-lean-score (score)" in both.stdout


def test_check_tables_samples_the_bellman_equation(tmp_path: Path, lean_2x2_d6: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.store import layout

    data = tmp_path / "data"
    copy_lean(lean_2x2_d6, data)
    args = ["knucklebones", "check-tables", "--columns", "2", "--rows", "2", "-d", data]
    good = invoke([*args, "--samples", "300", "--seed", "3"])
    assert good.code == 0, good.stderr
    assert "kb-lean: " in good.stdout and "(seed 3," in good.stdout and "ok:" in good.stdout
    # one wrong value among the sampled positions' successors breaks it
    path = layout.table_path(data, layout.own_key("kb-lean", "states"))
    table = pq.read_table(path)
    meta = table.schema.metadata
    value = table["value"].to_numpy().copy()
    value[:] = np.round(value, 1)  # every value off by up to 0.05
    table = table.set_column(table.schema.get_field_index("value"), "value", pa.array(value))
    pq.write_table(table.replace_schema_metadata(meta), path)
    bad = invoke([*args, "--samples", "300", "--seed", "3"])
    assert bad.code != 0 and "Bellman equation fails" in bad.stderr
    none = invoke(["knucklebones", "check-tables", "-d", tmp_path / "empty"])
    assert none.code == 2 and "no built wins and score tables" in none.stderr


def test_loss_prices_players_against_the_exact_tables(tmp_path: Path, lean_2x2_d6: Path) -> None:
    from pipeline.apps.knucklebones.loss import losses
    from pipeline.games.knucklebones.game import KnuckleRules

    data = tmp_path / "data"
    copy_lean(lean_2x2_d6, data)
    found = losses(data, ["random", "greedy", "ours-d4", "perfect"], 20, 7, KnuckleRules(2, 2, 6))
    by = {r.player: r for r in found}
    assert {r.decisions for r in found} == {by["random"].decisions} and by["random"].decisions > 0
    assert all(0 <= r.mean_win_regret <= r.max_win_regret <= 1 for r in found)
    # a random column is the costliest; the searches lose little (removals make games longer
    # than four placements, so even a depth-4 search is not perfect here)
    assert by["random"].mean_win_regret > max(by["greedy"].mean_win_regret, 0)
    assert by["random"].mean_win_regret > by["ours-d4"].mean_win_regret
    assert by["perfect"].max_win_regret == 0  # the tables' best column, by definition
    again = losses(data, ["greedy"], 20, 7, KnuckleRules(2, 2, 6))
    assert again[0] == by["greedy"]  # the sample and the ties are seeded
    none = invoke(["knucklebones", "loss", "-d", tmp_path / "empty"])
    assert none.code == 2 and "build them first" in none.stderr
    args = ["knucklebones", "benchmark", "--games", "1", "--depths", "1", "--opponents", "perfect"]
    match = invoke([*args, "-d", tmp_path / "empty"])
    assert match.code == 2 and "needs the full game's exact tables" in match.stderr


def _built_2x2_d6(data: Path, template: Path) -> None:
    """Both objectives' lean tables of the 2x2 board with a d6 (kb-lean, kb-lean-score): a copy
    of :func:`lean_2x2_d6`'s."""
    copy_lean(template, data)


def test_perfect_loss_sql_prices_the_sample_as_the_loss_command(
    tmp_path: Path, lean_2x2_d6: Path
) -> None:
    # issue 23: the SQL library answers what the heuristics lose against perfect play from the
    # exact tables alone (the decisions table and both objectives' states), with the numbers of
    # `knucklebones loss` (the same sample, the same picks)
    from pipeline.analysis.sql import run_query
    from pipeline.apps.knucklebones.loss import losses
    from pipeline.games.knucklebones.game import KnuckleRules
    from pipeline.games.knucklebones.players import decisions as sample

    data = tmp_path / "data"
    _built_2x2_d6(data, lean_2x2_d6)
    rows = run_query("knucklebones_perfect_loss", data, variant="kb-lean").to_dicts()
    found = losses(data, list(sample.PLAYERS), rules=KnuckleRules(2, 2, 6))
    assert [r["player"] for r in rows] == [f.player for f in found] == list(sample.PLAYERS)
    for row, f in zip(rows, found, strict=True):
        assert row["decisions"] == f.decisions > 100
        assert row["games"] == sample.GAMES and row["seed"] == sample.SEED
        for col, want in (
            ("share_suboptimal", f.share_suboptimal),
            ("mean_win_lost", f.mean_win_regret),
            ("max_win_lost", f.max_win_regret),
            ("mean_points_lost", f.mean_score_regret),
        ):
            assert abs(row[col] - want) <= 1e-12, (row["player"], col)
    # greedy gives away more than the depth-4 search of the Rust solver's evaluation
    by = {r["player"]: r for r in rows}
    assert by["greedy"]["mean_win_lost"] > by["seed-d4"]["mean_win_lost"] >= 0
    # the command line prints the same table
    shown = invoke(["query", "knucklebones_perfect_loss", "-p", "variant=kb-lean", "-d", data])
    assert shown.code == 0 and "seed-d4" in shown.stdout, shown.stderr


def test_openings_sql_names_perfect_plays_columns(tmp_path: Path, lean_2x2_d6: Path) -> None:
    # issue 23: the best opening column for each die, from the exact tables: the SQL's column
    # and values equal the lookups of `knucklebones solve` on the same position
    from pipeline.analysis.sql import run_query
    from pipeline.answer.answers import for_dir
    from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
    from pipeline.games.registry import get_variant
    from pipeline.solve.tolerance import is_tie

    data = tmp_path / "data"
    _built_2x2_d6(data, lean_2x2_d6)
    rows = run_query("knucklebones_openings", data, variant="kb-lean").to_dicts()
    assert len(rows) == 6 + 36  # every die on the empty board, every reply to every first die
    game = Knucklebones(KnuckleRules(2, 2, 6))
    answers = for_dir(data)
    variant = get_variant("knucklebones-2x2")  # its board: found in kb-lean's tables
    rules = answers.board_rules(variant)
    t = game.t
    for row in rows:
        pairs = np.zeros(2, dtype=np.int64)
        if row["ply"] == 1:  # the first die (the opponent's, in column 1) from the board text
            first = int(row["board"].split(";")[1].split("/")[0])
            pairs[0] = t.swap[t.place[0, first - 1]]
        found = answers.board(variant, rules.position_of(pairs), row["roll"], built=True)
        assert found.tables == ("kb-lean", "kb-lean-score")
        by = {c.column: c for c in found.columns}
        best = found.best
        assert best is not None
        # the SQL breaks a tie of win chances by the difference, the answer by the policy's
        # rule (naming the difference's column in other_best): equal win chances either way
        assert is_tie(by[row["best_column"]].win, best.win) and is_tie(row["win"], best.win)
        assert abs(row["score_diff"] - max(c.diff for c in found.columns)) <= 1e-12
        assert row["columns"] == len(found.columns)
    empty = [r for r in rows if r["ply"] == 0]
    assert all(r["all_same"] and r["win_lost_worst"] == 0 for r in empty)
    assert [r["roll"] for r in empty] == [1, 2, 3, 4, 5, 6]
    # without the decisions table the error names the build that writes it
    for found in data.glob("variants/*/decisions.parquet"):
        found.unlink()
    missing = invoke(["query", "knucklebones_openings", "-p", "variant=kb-lean", "-d", data])
    assert missing.code == 2 and "--device cuda` first" in missing.stderr, missing.stderr


def test_verify_samples_the_lean_tables_and_their_bellman_equation(
    tmp_path: Path, lean_2x2_d6: Path
) -> None:
    # issue 23: `verify` on the full game's lean tables reads some of their row groups (every
    # row would be hours) and checks the Bellman equation on sampled positions, saying how much
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.apps.knucklebones.known import VERIFY_SAMPLES
    from pipeline.store import layout

    data = tmp_path / "data"
    _built_2x2_d6(data, lean_2x2_d6)
    good = invoke(["verify", "-d", data])
    assert good.code == 0, good.stdout + good.stderr
    # one row group of 1,048,576 holds the 2x2 board (the full game has 4,590: 16 are read)
    assert "lean table variants/kb-lean/states.parquet: 1 of 1 row groups" in good.stdout
    line = next(x for x in good.stdout.splitlines() if "Bellman equation of" in x)
    assert line.startswith("ok") and f"{2 * VERIFY_SAMPLES} rows checked" in line
    assert "kb-lean, kb-lean-score" in line
    # every value off by up to 0.05: the sampled Bellman check fails, exit 3
    path = layout.table_path(data, layout.own_key("kb-lean", "states"))
    table = pq.read_table(path)
    meta = table.schema.metadata
    value = np.round(table["value"].to_numpy(), 1)
    table = table.set_column(table.schema.get_field_index("value"), "value", pa.array(value))
    pq.write_table(table.replace_schema_metadata(meta), path)
    bad = invoke(["verify", "-d", data])
    assert bad.code == 3 and "Bellman equation of kb-lean" in bad.stderr, bad.stderr


def test_build_device_cuda_small_board_writes_the_full_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A board under the full game's size built with --device cuda gets the CPU build's tables
    (states with every column, policy), its values from the GPU solve: here a stand-in that
    returns the CPU solver's bounds, so that the plumbing is checked without the simulator."""
    import pyarrow.parquet as pq

    from pipeline.games.knucklebones.exact import cpu as exact
    from pipeline.games.knucklebones.exact.solution import Solution
    from pipeline.games.knucklebones.exact.stream import StreamedKnucklebones
    from pipeline.games.knucklebones.game import KnuckleRules
    from pipeline.games.registry import REGISTRY, Variant

    rules = KnuckleRules(2, 2, 3)
    name = "kb-test-2x2-d3"
    variant = Variant(
        name, "test", lambda: StreamedKnucklebones(rules), False, family="knucklebones",
        separate=True,
    )  # fmt: skip
    REGISTRY._load()
    monkeypatch.setitem(REGISTRY._items, name, variant)
    calls: list[float] = []

    def fake_solve(r: KnuckleRules, tol: float, progress: Any = None, **_: Any) -> Any:
        calls.append(tol)
        sol = exact.solve(r, tol=tol)
        bounds = np.stack([sol.value - sol.bound, sol.value + sol.bound], axis=1)
        # a device array's look: sliced, then copied to the host
        device = type(
            "Bounds",
            (),
            {
                "__getitem__": lambda self, s: type(self)(),
                "copy_to_host": lambda self: bounds,
                "shape": bounds.shape,
            },
        )
        return Solution.of(r, device(), "cuda", np.float64, sol.bound, 0.0, sol.sweeps, 0.0, 0.0)

    monkeypatch.setattr(gpu, "cuda_module", lambda: object())
    monkeypatch.setattr(gpu, "solve", fake_solve)
    data = tmp_path / "data"
    r = invoke(["build", "--variant", name, "--device", "cuda", "-d", data])
    assert r.code == 0, r.stderr
    assert calls == [1e-13]  # the build's tolerance, on the GPU path
    states = pq.read_table(data / "variants" / name / "states.parquet")
    assert states.num_rows == 1540 and states["tiles"].null_count == 0
    assert (data / "variants" / name / "policy.parquet").exists()
    expected = exact.solve(rules, tol=1e-13).value
    assert (
        np.abs(states["value"].to_numpy() - expected[states["state_id"].to_numpy()]).max() < 1e-12
    )


def test_tree_and_play_use_the_lean_tables_when_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lean_2x2_d6: Path
) -> None:
    """The full game's table layout on the 2x2 board: tree prints the one answer at every line
    (looked up, exact), its root's columns `solve`'s; play's solver looks its columns up."""
    from pipeline.apps.knucklebones import position

    data = tmp_path / "data"
    copy_lean(lean_2x2_d6, data)
    root = position.search_tree("4_/__", "1_/__", 3, 2, data, "knucklebones-2x2")
    solved = position.solve("4_/__", "1_/__", 3, 2, "knucklebones-2x2", data)
    ours = list(root.children)
    assert [(c.value.win, c.value.diff) for c in ours if c.value] == [
        (c.win, c.diff) for c in sorted(solved.columns, key=lambda c: c.column)
    ]
    assert all(c.value is not None and c.value.looked_up == "tables" for c in ours)
    replies = [r for c in ours for roll in c.children for r in roll.children]
    assert replies and all(r.value is not None and r.value.looked_up == "tables" for r in replies)
    # a reply's value from the root's view is 1 minus its own (the reply position's answer)
    first = ours[0].children[0]  # column 1, then their roll of 1
    mover, opponent = next(c.next for c in solved.columns if c.column == 1).split(";")
    theirs = position.solve(mover, opponent, 1, 1, "knucklebones-2x2", data)
    assert [r.value.win for r in first.children if r.value] == [
        1 - c.win for c in sorted(theirs.columns, key=lambda c: c.column) if c.win is not None
    ]
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n2\n" * 30))
    shown = invoke(["knucklebones", "play", "--seed", "5", "-v", "knucklebones-2x2", "-d", data])
    assert shown.code == 0 and "exact: from the tables" in shown.stdout, shown.stderr


@pytest.mark.parametrize(
    ("board", "dtype"),
    [
        ((3, 3, 6, "wins"), np.float64),
        ((3, 3, 6, "score"), np.float32),
        ((2, 2, 3, "wins"), np.float64),
    ],
)
def test_kernels_compile_for_a_gpu_without_one(board: tuple, dtype: type) -> None:
    # The simulator runs the kernels as Python, so it cannot catch what only numba-cuda's type
    # inference and NVVM see (a kernel that would fail on the GPU's first launch): compile both
    # kernels of the full game (and a small board) to PTX for an H100 (sm_90), with the argument
    # types of a real launch. Needs NVVM and NVRTC (wheels of the test extra), not a driver.
    from pipeline.games.knucklebones.game import KnuckleRules

    try:
        import numba.cuda  # noqa: F401
    except ImportError:
        cannot_run("numba-cuda is not installed: pip install '.[test]'")
    try:
        ptx = gpu.compile_ptx(KnuckleRules(*board), dtype, cc=(9, 0))
    except Exception as e:
        # no NVVM or NVRTC library here (not Linux, or the test extra not installed): say why
        # in one line; CI installs both, so there it fails instead of skipping
        missing = e.__class__.__name__.endswith(("NotFoundError", "SupportError"))
        if not missing:
            raise
        cannot_run(f"CUDA compiler libraries missing ({e.__class__.__name__}): pip install "
                   "nvidia-cuda-nvcc-cu12 nvidia-cuda-nvrtc-cu12")  # fmt: skip
    for text, name in ((ptx.init, "init"), (ptx.sweep, "sweep")):
        assert ".target sm_90" in text and ".visible .entry" in text and name in text
    # the bounds are read and written in the chosen precision (16- or 8-byte pairs)
    kind = "f64" if dtype == np.float64 else "f32"
    assert f"ld.global.{kind}" in ptx.sweep or f"ld.global.v2.{kind}" in ptx.sweep
    assert f"st.global.{kind}" in ptx.sweep


def test_a_numpy_numba_cuda_cannot_compile_with_is_refused_in_one_line(tmp_path: Path) -> None:
    """Issue 31's first launch on an H100: numba-cuda 0.30.4 imported under numpy 2.5 and failed
    at the first kernel (``np.row_stack``, removed in numpy 2.5) as an internal error. Here numpy
    loses ``row_stack`` the same way (a sitecustomize), and ``--device cuda`` refuses in one line
    with the fix, exit 2, before it looks for a GPU."""
    (tmp_path / "sitecustomize.py").write_text("import numpy\ndel numpy.row_stack\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    board = ["--columns", "2", "--rows", "1", "--faces", "2", "--device", "cuda"]
    run = subprocess.run(
        [sys.executable, "-m", "pipeline", "knucklebones", "solve-exact", *board],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "row_stack" in lines[0] and "pip install 'numpy<2.5'" in lines[0], lines[0]
