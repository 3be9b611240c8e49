"""Issue 38: the full game's exact artefacts (labelled positions, opening book, first-die
chances, greedy against its best response) made in one GPU call and kept in the repository;
here their parts on small boards: the compact files, the data contract, the GPU's gather and
greedy kernels under numba's CUDA simulator, and the whole call rehearsed
(benchmarks/gpu_artefacts.py dry).

Rules: seed 004_4436d6a68a1265db.txt and seeds/README.md (Cult of the Lamb). The full game's
published start value: benchmarks/gpu-runs/2026-11-26-h100/all.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.analysis import knucklebones_artefacts as contract
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.games.knucklebones.players import artefacts, labels, positions
from pipeline.games.knucklebones.players import book as book_module
from pipeline.store.files import write_file_atomic as save
from tests.conftest import REPO, invoke
from tests.support.ci import cannot_run
from tests.support.knucklebones_exact import exact, lookups
from tests.support.knucklebones_greedy import solve_cpu, values_cpu

SMALL = KnuckleRules(2, 2, 3)
PROVENANCE = {"device": "cpu (a test)", "code_hash": "x", "seconds": 1.0, "tolerance": 1e-11}


@cache
def labelled() -> labels.Labelled:
    found = positions.labelled_set(Knucklebones(SMALL), lookups(SMALL), 200, 150, 3)
    found.meta.update(PROVENANCE)
    return found


@cache
def small_book(plies: int = 3) -> book_module.Book:
    return book_module.make(Knucklebones(SMALL), lookups(SMALL), plies, dict(PROVENANCE))


# -- the compact files ------------------------------------------------------------------------


def test_a_compact_labelled_set_rounds_to_float32_and_recomputes_the_successors(
    tmp_path: Path,
) -> None:
    import pyarrow.parquet as pq

    found = labelled()
    save(tmp_path / "full.parquet", artefacts.labelled_writer(found))
    save(tmp_path / "compact.parquet", artefacts.labelled_writer(found, compact=True))
    schema = pq.read_schema(tmp_path / "compact.parquet")
    assert "next_state_id" not in schema.names and str(schema.field("win").type) == "float"
    back = artefacts.read_labelled(tmp_path / "compact.parquet")
    assert back.meta["compact"] and back.meta["seed"] == 3
    assert np.array_equal(back.state_id, found.state_id)
    assert np.array_equal(back.next_id, found.next_id)  # from the ids, not the file
    assert np.array_equal(back.source, found.source) and np.array_equal(back.ply, found.ply)
    for name in ("win", "diff"):
        assert back.values[name].dtype == np.float64
        assert np.allclose(back.values[name], found.values[name], rtol=2**-24, atol=0)
        assert np.array_equal(np.isnan(back.choices[name]), np.isnan(found.choices[name]))
        legal = ~np.isnan(found.choices[name])
        assert np.allclose(back.choices[name][legal], found.choices[name][legal], rtol=2**-24,
                           atol=0)  # fmt: skip
        # the rounding is allowed for, and nothing more: exact values meet the allowance
        residual = contract.bellman_residual(back, name).max()
        assert residual <= contract.bellman_allowance(back, name)
        assert contract.bellman_allowance(found, name) < 1e-9  # float64: the tolerance alone
    # the full form still reads; the compact one is smaller
    assert artefacts.read_labelled(tmp_path / "full.parquet").next_id.shape == found.next_id.shape
    assert (tmp_path / "compact.parquet").stat().st_size < (
        tmp_path / "full.parquet"
    ).stat().st_size


def test_a_compact_book_keeps_its_ids_and_rounds_its_values(tmp_path: Path) -> None:
    made = small_book()
    save(tmp_path / "full.npz", artefacts.book_writer(made))
    save(tmp_path / "compact.npz", artefacts.book_writer(made, compact=True))
    for name in ("full.npz", "compact.npz"):
        back = artefacts.read_book(tmp_path / name)
        assert np.array_equal(back.state_id, made.state_id) and back.plies == 3
        assert back.win.dtype == np.float64 and back.meta["device"] == "cpu (a test)"
        assert np.allclose(back.win, made.win, rtol=2**-24, atol=0)
        assert np.allclose(back.diff, made.diff, rtol=2**-24, atol=0)
    assert artefacts.read_book(tmp_path / "compact.npz").meta["compact"]
    assert np.array_equal(artefacts.read_book(tmp_path / "full.npz").win, made.win)


def test_uniform_positions_of_a_board_with_fewer_live_positions_than_asked_ends() -> None:
    # a 2x1 board with a d2 has 28 positions, 11 in play: asking for 100 gives those 11 (this
    # drew forever before)
    g = Knucklebones(KnuckleRules(2, 1, 2))
    found = positions.uniform_positions(g, 100, 3)
    from pipeline.games.knucklebones.exact.cpu import pairs_of

    live = np.flatnonzero(~g.terminal_mask(pairs_of(g.r, np.arange(g.n_states))))
    assert np.array_equal(found, live)


# -- what the book tells, and the contract ------------------------------------------------------


def test_first_die_chances_average_to_the_start_value_and_replies_rank_both_columns() -> None:
    made = small_book()
    v = exact(SMALL)
    rows = contract.first_die(made)
    assert [r["die"] for r in rows] == [1, 2, 3]
    assert abs(np.mean([r["win"] for r in rows]) - v["wins"][0]) < 1e-12
    assert abs(np.mean([r["diff"] for r in rows]) - v["score"][0]) < 1e-12
    replies = contract.replies(made)
    assert len(replies) == 9 and {r["best"] for r in replies} <= {"facing", "open"}
    for r in replies:
        assert r["other_win"] is None or r["win"] >= r["other_win"]
        if r["first"] == r["die"]:
            # removing the first die leaves the first player facing the same position it made:
            # the second player's chance is then the first player's for that die
            assert r["best"] == "facing" and abs(r["win"] - rows[r["die"] - 1]["win"]) < 1e-12


def test_the_contract_holds_on_exact_artefacts_and_fails_on_a_wrong_value() -> None:
    made = small_book()
    found = contract.check_book(made, "book")
    assert found and all(f.ok for f in found), [f.line() for f in found if not f.ok]
    wrong = book_module.Book(
        made.columns, made.rows, made.faces, made.plies, made.state_id, made.win.copy(),
        made.diff.copy(), dict(made.meta),
    )  # fmt: skip
    wrong.win[0] += 1e-6  # the start position: its Bellman equation and the first dice's mean
    failed = {f.check for f in contract.check_book(wrong, "book") if f.ok is False}
    assert any("Bellman equation (win)" in c for c in failed)
    assert any("first dice's win average" in c for c in failed)

    found = contract.check_labelled(labelled(), "labelled")
    assert all(f.ok for f in found), [f.line() for f in found if not f.ok]
    bad = labelled().subset(np.arange(len(labelled())))
    bad.values["diff"][5] += 1e-6
    bad.meta.pop("code_hash")
    failed = {f.check for f in contract.check_labelled(bad, "labelled") if f.ok is False}
    assert any("Bellman equation (diff)" in c for c in failed)
    assert any("provenance" in c for c in failed)


def test_the_full_games_start_value_is_checked_against_the_published_one() -> None:
    # a stand-in book of the full game's board, only its start position's line of play is
    # needed: the published figure, and a solve's record of it, are compared
    published = contract.PUBLISHED_START
    assert published["win"] == pytest.approx(0.509030469096103, abs=1e-15)  # all.md, 2026-11-26
    made = book_module.Book(
        3,
        3,
        6,
        0,
        np.array([0]),
        np.array([published["win"]]),
        np.array([published["diff"]]),
        {**PROVENANCE, "start": published},
    )
    found = {f.check: f.ok for f in contract.check_book(made, "b")}
    assert found["the start value (win) is the published 0.509030469096"]
    assert found["the solve's start value (diff) is the published one"]
    made.win[0] += 1e-9
    found = {f.check: f.ok for f in contract.check_book(made, "b")}
    assert found["the start value (win) is the published 0.509030469096"] is False


def test_check_artefacts_says_what_is_absent_and_fails_on_a_broken_artefact(
    tmp_path: Path,
) -> None:
    said = invoke(["knucklebones", "check-artefacts", "--models", str(tmp_path)])
    assert said.code == 0, said.stderr
    assert "3x3-d6-book.npz: not made yet" in said.stdout and "(2 skipped)" in said.stdout
    save(tmp_path / "2x2-d3-book.npz", artefacts.book_writer(small_book(), compact=True))
    save(tmp_path / "2x2-d3-labelled.parquet", artefacts.labelled_writer(labelled(), compact=True))
    said = invoke(["knucklebones", "check-artefacts", "--models", str(tmp_path)])
    assert said.code == 0 and "FAIL" not in said.stdout, said.stdout
    broken = small_book()
    broken = book_module.Book(broken.columns, broken.rows, broken.faces, broken.plies,
                              broken.state_id, broken.win + 0.01, broken.diff, {})  # fmt: skip
    save(tmp_path / "2x2-d3-book.npz", artefacts.book_writer(broken))
    said = invoke(["knucklebones", "check-artefacts", "--models", str(tmp_path)])
    assert said.code == 3 and "FAIL 2x2-d3-book.npz: provenance" in said.stdout
    assert "contracts failed" in said.stderr  # as verify says it


def test_every_packaged_artefact_meets_its_contract() -> None:
    # the books and labelled sets kept in pipeline/games/knucklebones/players/models/ (the full
    # game's once its GPU call has run: absent until then, and said so)
    found = contract.check_packaged()
    assert not [f.line() for f in found if f.ok is False]
    full = [f for f in found if f.artefact.startswith("3x3-d6-")]
    assert full  # checked, or reported absent


def test_the_committed_inputs_are_positions_in_play_drawn_as_recorded() -> None:
    from pipeline.games.knucklebones.exact.cpu import pairs_of

    path = REPO / "benchmarks" / "gpu-inputs" / "3x3-d6-positions.npz"
    with np.load(path, allow_pickle=False) as found:
        ids, source = found["state_id"], found["source"]
        meta = json.loads(str(found["meta"]))
    assert (meta["board"], meta["games"], meta["uniform"], meta["seed"]) == ("3x3-d6", 4000,
                                                                          20000, 38)  # fmt: skip
    assert len(ids) >= 100_000 and len(np.unique(ids)) == len(ids)
    assert (source == 0).sum() > 80_000 and (source == 1).sum() > 10_000
    g = Knucklebones(KnuckleRules(3, 3, 6))
    assert not g.terminal_mask(pairs_of(g.r, ids)).any()
    assert ids[0] == g.start_state()  # every game starts on empty boards


# -- greedy against its best response -------------------------------------------------------------


def test_greedy_against_its_best_response_matches_play() -> None:
    # the plain solve's values against games: greedy (ties drawn among moves, as the player
    # engine draws) moving first, the opponent moving to where greedy is worth least (G)
    from pipeline.games.knucklebones.exact.cpu import pairs_of
    from pipeline.games.knucklebones.players.engine import Player

    rules = KnuckleRules(2, 2, 2)
    g = Knucklebones(rules)
    _, gv, _ = values_cpu(rules)
    greedy = Player(g, "greedy")
    pos = pairs_of(rules, np.arange(g.n_states))
    over, final = g.terminal_mask(pos), g.final_values(pos)
    moves: dict[tuple[int, int], dict[int, int]] = {}  # (state, die) -> column -> next state
    rng = np.random.default_rng(11)
    total, games = 0.0, 20000
    for _ in range(games):
        s, mover = g.start_state(), 0  # greedy moves first
        while not over[s]:
            die = int(rng.integers(1, 3))
            if (s, die) not in moves:
                moves[s, die] = {c: g.state_of(p) for c, p in g.successors(pos[s], die)}
            after = moves[s, die]
            if mover == 0:
                column = greedy(pos[s], die, rng)
            else:  # the best response: where greedy, to move next, is worth least
                column = min(after, key=lambda c: gv[after[c]])
            s, mover = after[column], 1 - mover
        # a finished position's value is the result of the player to move there
        total += final[s] if mover == 0 else 1.0 - final[s]
    assert abs(total / games - gv[0]) < 4 * np.sqrt(0.25 / games), (total / games, gv[0])
    # greedy loses to it: below the first player's chance under perfect play
    assert gv[0] < exact(rules)["wins"][0] and solve_cpu(rules).greedy_first[0] == gv[0]


# -- the GPU kernels (simulator) and their compilation ------------------------------------------


@pytest.fixture(scope="module")
def sim() -> dict[str, Any]:
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [sys.executable, "-m", "tests.support.knucklebones_artefacts_sim"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", ["gather-wins-float64", "gather-score-float32"])
def test_the_gather_reads_the_values_of_any_ids_from_the_gpu(sim: dict, case: str) -> None:
    found = sim[case]
    assert sim["simulated"] and found["on_device"] and found["equals_the_range_copy"]
    rounding = 2**-24 * 50 if "float32" in case else 0.0  # float32 bounds of scores up to 50
    assert found["max_diff_cpu"] <= 2 * found["tolerance"] + rounding
    assert sim["gather-chunks"]


@pytest.mark.parametrize("board", ["3x1-d2", "3x1-d3", "2x2-d2"])
def test_greedy_on_the_gpu_equals_the_plain_solve_and_a_cut_bound_holds(
    sim: dict, board: str
) -> None:
    found = sim[f"greedy-{board}"]
    assert found["converged"] and found["max_diff"] <= 2e-10
    assert not found["cut_converged"] and found["cut_holds"] and found["cut_width"] > 0


def _artefact_ptx(rules: KnuckleRules, dtype: type, cc: tuple[int, int]) -> tuple[str, str]:
    """The gather's and greedy's best-response sweep's kernels (issue 38's GPU call) compiled
    to PTX without a GPU, as :func:`gpu.compile_ptx` compiles a solve's, with the argument types
    of their launches: a kernel that would not compile on the GPU fails here."""
    from pipeline.games.knucklebones.exact import gpu

    with gpu._ptx_compiler(cc) as ptx:
        tb = gpu.exact.tables(rules)
        bounds: np.ndarray = np.zeros((2, 2), dtype=dtype)
        ids = np.zeros(1, dtype=np.int64)
        out = np.zeros(2, dtype=np.float64)
        host = {k: getattr(tb, k) for k in gpu.TABLE_NAMES}
        gather = ptx(gpu._made("make_gather"), (bounds, ids, out))
        greedy = ptx(
            gpu._made("make_greedy", tb.columns, tb.faces, gpu.THREADS),
            gpu.greedy_args(tb, host, bounds, out),
        )
    return gather, greedy


def test_the_artefact_kernels_compile_for_a_gpu_without_one() -> None:
    try:
        import numba.cuda  # noqa: F401
    except ImportError:
        cannot_run("numba-cuda is not installed: pip install '.[test]'")
    try:
        gather, greedy = _artefact_ptx(KnuckleRules(3, 3, 6, "wins"), np.float32, cc=(9, 0))
    except Exception as e:
        if not e.__class__.__name__.endswith(("NotFoundError", "SupportError")):
            raise
        cannot_run(f"CUDA compiler libraries missing ({e.__class__.__name__})")
    for text in (gather, greedy):
        assert ".target sm_90" in text and ".visible .entry" in text
    assert "ld.global.f32" in greedy and "st.global.f32" in greedy


# -- the whole call, rehearsed ---------------------------------------------------------------------


def test_the_gpu_call_rehearsed_on_a_tiny_board_makes_every_file_and_check(tmp_path: Path) -> None:
    # benchmarks/gpu_artefacts.py dry: the call as on the GPU, step for step, on a 2x1 board
    # with a d2 under the simulator, polars and DuckDB refused; every value against the CPU
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "OUT")}
    run = subprocess.run(
        [sys.executable, "benchmarks/gpu_artefacts.py", "dry", "--board", "2x1d2", "--out",
         str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, (out / "artefacts.md").read_text() if out.exists() else run.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([
        "2x1-d2-book.npz", "2x1-d2-labelled.parquet", "knucklebones-2x1-d2.json",
        "knucklebones-2x1-d2.md", "artefacts.log", "artefacts.md", "artefacts.json",
    ])  # fmt: skip
    summary = json.loads((out / "knucklebones-2x1-d2.json").read_text())
    checks = dict((what, ok) for what, ok in summary["checks"])
    assert all(checks.values()) and any("equal the CPU solver's" in c for c in checks)
    assert any("Bellman equation (win) among the positions' own values" in c for c in checks)
    assert summary["provenance"]["device"] == "the CUDA simulator"
    assert summary["greedy"]["converged"] and summary["first_die"]
    session = json.loads((out / "artefacts.json").read_text())
    assert [r["name"] for r in session["ran"]] == [
        "inputs (the small board's positions)", "packages and the GPU", "solve wins",
        "solve score", "assemble", "greedy (best response)",
    ]  # fmt: skip
