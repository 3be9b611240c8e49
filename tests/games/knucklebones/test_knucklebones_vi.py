"""The graph-free Knucklebones value iteration (issue 17), single-process and on Dask.

Cross-checks against the graph solver (games/knucklebones/game.py + solve/value_iteration.py)
state by state, on small boards with the full game's columns of three slots or its three columns;
the 2x2 start values that docs/variants.md gives (0.5717476480, score 1.9563511667: computed
here, and by the independent reference of test_knucklebones_reference.py).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from pipeline.errors import UsageError
from pipeline.games.knucklebones.exact import cpu as vi
from pipeline.games.knucklebones.exact import distributed as kd
from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules
from pipeline.solve.rank_order import best_moves
from pipeline.solve.value_iteration import solve_value_iteration

#: A board small enough for Dask round trips: 2 columns of 2 slots, four-faced die (39 sweeps).
SMALL = KnuckleRules(2, 2, 4)


def graph_solution(rules: KnuckleRules):
    g = Knucklebones(rules).graph()
    return g, solve_value_iteration(g)


#: Each board with both objectives: 2x3 has the full game's columns of three slots, 3x2 its
#: three columns; a three-faced die keeps them to a second or two (2x3 with a d6 and 3x3 with a
#: d3 took minutes each, mostly in the graph solver, and ran only by hand; 3x3 with a d2 needs
#: some 1,600 sweeps, each a parallel step that a loaded machine slows to a crawl).
BOARDS = [
    KnuckleRules(columns, rows, faces, objective)
    for columns, rows, faces in ((2, 2, 6), (2, 3, 3), (3, 2, 3))
    for objective in ("wins", "score")
]


@pytest.mark.parametrize(
    "rules", BOARDS, ids=lambda r: f"{r.columns}x{r.rows}d{r.faces}-{r.objective}"
)
def test_values_equal_the_graph_solver(rules: KnuckleRules) -> None:
    _, old = graph_solution(rules)
    new = vi.solve(rules)
    assert new.bound <= vi.DEFAULT_TOLERANCE
    np.testing.assert_allclose(new.value, old.value, rtol=0, atol=1e-9)


def test_compact_sweeps_equal_full_sweeps() -> None:
    # The compact phase (sweeps over the open positions only) against every live position swept.
    rules = KnuckleRules(2, 2, 6, "score")
    full, compact = vi.solve(rules, compact=False), vi.solve(rules)
    assert max(full.bound, compact.bound) <= vi.DEFAULT_TOLERANCE
    np.testing.assert_allclose(compact.value, full.value, rtol=0, atol=2 * vi.DEFAULT_TOLERANCE)
    # a loose tolerance stops early in both, with the same guarantee
    loose = vi.solve(rules, tol=1e-4)
    assert loose.sweeps < compact.sweeps
    assert np.abs(loose.value - compact.value).max() <= 1e-4 + vi.DEFAULT_TOLERANCE


def test_start_values_in_the_docs() -> None:
    # docs/variants.md, named variants: knucklebones-2x2 0.5717476480, -score 1.9563511667
    # (computed here; the independent reference gives them too)
    assert vi.solve(KnuckleRules(2, 2, 6)).value[0] == pytest.approx(0.5717476480, abs=1e-10)
    score = vi.solve(KnuckleRules(2, 2, 6, "score")).value[0]
    assert score == pytest.approx(1.9563511667, abs=1e-10)


def test_bound_holds_at_a_loose_tolerance() -> None:
    rules = KnuckleRules(2, 2, 6)
    tight, loose = vi.solve(rules, tol=1e-13), vi.solve(rules, tol=1e-5)
    assert loose.sweeps < tight.sweeps
    assert np.abs(loose.value - tight.value).max() <= 1e-5 + 1e-13


def test_policy_equals_the_graph_policy() -> None:
    rules = KnuckleRules(2, 2, 6)
    g, old = graph_solution(rules)
    best, n_optimal = best_moves(g, old)
    value = vi.solve(rules, tol=1e-13).value
    n = len(value)
    rows = [vi.policy_block(rules, value, a, min(a + 50_000, n)) for a in range(0, n, 50_000)]
    assert len(rows) == 3
    new = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
    np.testing.assert_array_equal(new["state_id"], g.node_state)
    np.testing.assert_array_equal(new["roll"], g.node_roll)
    np.testing.assert_array_equal(new["best_move"], g.mv_label[best])
    np.testing.assert_array_equal(new["next_state_id"], g.mv_dst[best])
    np.testing.assert_array_equal(new["n_optimal"], n_optimal)
    n_moves = np.bincount(g.mv_node, minlength=g.node_state.shape[0])
    np.testing.assert_array_equal(new["n_moves"], n_moves)
    np.testing.assert_allclose(new["value"], old.node_value, rtol=0, atol=1e-9)


def test_float32_storage_is_close() -> None:
    # SMALL, not the 2x2 board with a d6 (two solves of 127,765 positions: about 20 s on a busy
    # machine): float32 storage changes only the bounds' dtype, the same sweeps on any board,
    # and SMALL's values lie in [0, 1] as every board's win chances do
    rules = SMALL
    f32 = vi.solve(rules, tol=1e-6, dtype=np.float32)
    np.testing.assert_allclose(f32.value, vi.solve(rules).value, rtol=0, atol=2e-6)


def test_bad_input_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="tolerance"):
        vi.solve(SMALL, tol=0)
    with pytest.raises(UsageError, match="sweeps"):
        vi.solve(SMALL, max_sweeps=2)
    with pytest.raises(UsageError, match="shards"):
        vi.shard_bounds(10, 11)


def test_without_dask_the_error_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "dask.distributed", None)
    with pytest.raises(UsageError, match=r"pip install 'stb-pipeline\[distributed\]'"):
        kd.solve_distributed(SMALL, workers=1)


def test_cli_solve_exact(cli: Callable) -> None:
    result = cli(["knucklebones", "solve-exact", "--columns", "2", "--rows", "2"])
    assert result.code == 0, result.stderr
    assert "start value 0.5717476480 (wins), 127,765 positions" in result.stdout
    bad = cli(["knucklebones", "solve-exact", "--objective", "draws"])
    assert bad.code == 2 and bad.stderr.count("\n") == 1


# -- Dask ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    """Two local worker processes of one thread (a task runs numba serially)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as c:
        yield c


def test_distributed_equals_single_process_bitwise(cluster, tmp_path: Path) -> None:
    # Same shards, one thread: the same sweep schedule, so the same bits.
    single = vi.solve(SMALL, shards=5, threads=1)
    dist = kd.solve_distributed(
        SMALL, address=cluster.scheduler_address, shards=5, checkpoint_dir=tmp_path
    )
    assert dist.sweeps == single.sweeps
    np.testing.assert_array_equal(dist.value, single.value)
    np.testing.assert_allclose(dist.value, vi.solve(SMALL).value, rtol=0, atol=1e-10)
    assert kd.read_state(tmp_path)["sweep"] == dist.sweeps
    assert {p.name for p in tmp_path.iterdir()} == {f"sweep-{dist.sweeps:06d}", "state.json"}


def test_resume_from_a_checkpoint(cluster, tmp_path: Path) -> None:
    address = cluster.scheduler_address
    with pytest.raises(UsageError, match="did not reach"):
        kd.solve_distributed(
            SMALL, address=address, shards=3, checkpoint_dir=tmp_path, max_sweeps=4
        )
    assert kd.read_state(tmp_path)["sweep"] == 4
    seen: list[int] = []
    resumed = kd.solve_distributed(
        SMALL, address=address, shards=3, checkpoint_dir=tmp_path, resume=True,
        progress=lambda sweep, *_: seen.append(sweep),
    )  # fmt: skip
    assert seen[0] == 5
    np.testing.assert_array_equal(resumed.value, vi.solve(SMALL, shards=3, threads=1).value)


def test_a_killed_worker_does_not_change_the_answer(cluster, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.Client(cluster.scheduler_address) as client:
        pids = list(client.run(os.getpid).values())

    def kill_one(sweep: int, *_: float) -> None:
        if sweep == 2:  # between waves: the next wave is submitted while the worker dies
            os.kill(pids[0], signal.SIGKILL)

    dist = kd.solve_distributed(
        SMALL, address=cluster.scheduler_address, shards=6, checkpoint_dir=tmp_path,
        progress=kill_one,
    )  # fmt: skip
    np.testing.assert_array_equal(dist.value, vi.solve(SMALL, shards=6, threads=1).value)
    with distributed.Client(cluster.scheduler_address) as client:
        client.wait_for_workers(2, timeout=30)
        assert pids[0] not in client.run(os.getpid).values()
