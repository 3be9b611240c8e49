"""The Knucklebones position solver (expectimax) and its commands: solve, tree, play, benchmark.

Rules: seed 004_4436d6a68a1265db.txt and seeds/README.md (Cult of the Lamb).
"""

from __future__ import annotations

import io
import itertools
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.analysis.schema_docs import TABLES
from pipeline.apps.knucklebones.match import Player, match, play_game, wilson
from pipeline.apps.knucklebones.position import search_tree, solve
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.games.knucklebones.players.search import OURS, SEED, Searcher
from pipeline.solve.value_iteration import solve_value_iteration


@pytest.mark.parametrize(("objective", "kind", "field"), [("wins", OURS, 0), ("score", SEED, 1)])
def test_search_agrees_with_value_iteration_where_it_is_exact(
    objective: str, kind: int, field: int
) -> None:
    # Two independent methods on the 2x2 board: where every searched line ends the game, the
    # expectimax value is exact and must equal the value-iteration fixed point.
    g = Knucklebones(KnuckleRules(2, 2, 6, objective))
    gr = g.graph()
    value = solve_value_iteration(gr).value
    searcher = Searcher(g)
    live = np.flatnonzero(np.isnan(gr.terminal))
    checked = 0
    for s in np.random.default_rng(4).choice(live, 200, replace=False):
        ev = searcher.evaluate(g.positions[s].astype(np.int64), 5, kind)
        if ev.exact:
            assert (ev.win, ev.diff)[field] == pytest.approx(value[s], abs=1e-9)
            checked += 1
    assert checked > 50


def test_column_permutations_give_the_same_evaluation() -> None:
    boards = (["41", "2", "66"], ["_", "35", "1"])
    first = None
    for perm in itertools.permutations(range(3)):
        b1 = "/".join(boards[0][i] for i in perm)
        b2 = "/".join(boards[1][i] for i in perm)
        a = solve(b1, b2, 3, depth=2)
        got = {perm[cv.column - 1]: (cv.win, cv.diff, cv.exact) for cv in a.columns}
        if first is None:
            first = got
        assert got == first


def test_last_move_is_exact_and_right() -> None:
    # Mover 8 dice, one slot left; placing the 6 there removes the opponent's 6s and ends it.
    a = solve("11_/222/333", "66_/4__/5__", 6, depth=1)
    assert [cv.column for cv in a.columns] == [1]
    assert a.best.exact
    assert a.best.win == 1.0
    assert a.best.diff == (4 + 6 + 18 + 27) - (4 + 5)


def test_tree_lists_moves_and_replies() -> None:
    root = search_tree("44/1/_", "2/_/_", 4, depth=2)
    labels = [c.label.removesuffix(" (best)") for c in root.children]
    assert labels == ["we play column 1", "we play column 2", "we play column 3"]
    assert sum(c.label.endswith("(best)") for c in root.children) == 1
    best = next(c for c in root.children if c.label.endswith("(best)"))
    assert best.value is not None
    assert best.value.win == max(c.value.win for c in root.children if c.value is not None)
    # A node's value is the average over the reply rolls of the reply best for them.
    first = root.children[0]
    replies = [min(r.value.win for r in roll.children if r.value) for roll in first.children]
    assert first.value is not None
    assert first.value.win == pytest.approx(sum(replies) / 6, abs=1e-9)
    rolls = root.children[0].children
    assert [r.label for r in rolls] == [f"they roll {f}" for f in range(1, 7)]
    assert all(r.children for r in rolls)


def test_simulated_games_and_intervals() -> None:
    g = Knucklebones(KnuckleRules())
    rng = np.random.default_rng(1)
    rec = play_game(g, Player(g, "random"), Player(g, "random"), True, rng)
    assert len(rec.decisions_ms) >= 5
    lo, hi = wilson(50, 100)
    assert lo < 0.5 < hi and hi - lo == pytest.approx(2 * 0.0960, abs=2e-3)
    row = match(g, "ours-d1", "random", 4, seed=3)
    assert row["wins"] + row["draws"] + row["losses"] == 4
    assert row["ci_low"] <= row["win_rate"] <= row["ci_high"]


def test_cli_solve_and_errors(cli) -> None:
    ok = cli(["knucklebones", "solve", "44_/1__/___", "2__/___/___", "4", "--depth", "2"])
    assert ok.code == 0, ok.stderr
    assert "best column" in ok.stdout and "win" in ok.stdout
    for args, needle in (
        (["44/1/_/", "2/_/_", "4"], "expected 3 columns"),
        (["4/_/_", "4/_/_", "2"], "both boards"),
        (["4444/_/_", "_/_/_", "2"], "at most 3"),
        (["4/_/_", "_/_/_", "7"], "not a face"),
        (["111/222/333", "_/_/_", "1"], "game is over"),
        (["4/_/_", "_/_/_", "1", "--depth", "0"], "--depth"),
    ):
        bad = cli(["knucklebones", "solve", *args])
        assert bad.code == 2, args
        assert needle in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_cli_play_from_stdin(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    # Always try column 1, then 2, then 3: illegal answers are asked again.
    monkeypatch.setattr("sys.stdin", io.StringIO("x\n" + "1\n2\n3\n" * 30))
    res = cli(["knucklebones", "play", "--seed", "5", "--depth", "1"])
    assert res.code == 0, res.stderr
    assert "game over" in res.stdout
    assert "is not a column you can play" in res.stdout
    # the legal columns are named (rich markup once swallowed a bracketed list)
    assert "'x' is not a column you can play: choose 1/2/3" in res.stdout
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n"))
    short = cli(["knucklebones", "play", "--seed", "5", "--depth", "1"])
    assert short.code == 0 and "end of input: game stopped" in short.stdout
    # issue 48: `q` leaves, as in `stb-pipeline play` (it was asked again, forever)
    for word in ("q", "Q", "quit"):
        monkeypatch.setattr("sys.stdin", io.StringIO(f"1\n{word}\n" + "1\n" * 30))
        left = cli(["knucklebones", "play", "--seed", "5", "--depth", "1"])
        assert left.code == 0 and "(you quit: game stopped)" in left.stdout
        assert "game over" not in left.stdout and "(q quits)" in left.stdout


def test_cli_benchmark_writes_rows(cli, tmp_path: Path) -> None:
    res = cli(
        [
            "knucklebones",
            "benchmark",
            "--games",
            "2",
            "--depths",
            "1",
            "--seed",
            "9",
            "-d",
            tmp_path,
        ]
    )
    assert res.code == 0, res.stderr
    rows = pl.read_parquet(tmp_path / "benchmarks.parquet").filter(variant="knucklebones")
    assert sorted(rows["opponent"]) == ["greedy", "random", "seed-d2"]
    assert (rows["wins"] + rows["draws"] + rows["losses"] == 2).all()
    assert rows["median_decision_ms"].min() > 0
    documented = set(TABLES["benchmarks"][1])
    assert set(rows.columns) <= documented, set(rows.columns) - documented
    # A later run of another depth adds rows; the same (strategy, opponent) is replaced.
    more = ["--games", "2", "--depths", "2", "--opponents", "random", "-d", tmp_path]
    assert cli(["knucklebones", "benchmark", *more]).code == 0
    assert cli(["knucklebones", "benchmark", *more]).code == 0
    rows = pl.read_parquet(tmp_path / "benchmarks.parquet").filter(variant="knucklebones")
    assert rows.height == 4 and rows.filter(strategy="ours-d2").height == 1
    bad = cli(["knucklebones", "benchmark", "--opponents", "nobody", "-d", tmp_path])
    assert bad.code == 2
