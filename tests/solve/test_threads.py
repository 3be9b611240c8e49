"""Compiled loops on threads (pipeline.solve.threads), and one compiled signature per kernel
whatever integer types a game's graph holds (a first run compiles each signature)."""

from __future__ import annotations

import threading

import numba
import numpy as np
import pytest

from pipeline.games.registry import get_variant
from pipeline.solve import policy_eval, threads, ties
from pipeline.solve.rank_order import best_moves, solve_rank_order


def test_spans_cover_the_range_once_in_order() -> None:
    for n in (0, 1, 5, 64, 1000):
        for parts in (1, 3, 8, 2000):
            cut = threads.spans(n, parts)
            covered = [i for lo, hi in cut for i in range(lo, hi)]
            assert covered == list(range(n))
            assert all(hi > lo for lo, hi in cut)
            assert len(cut) == min(max(parts, 1), n)


def test_run_blocks_fills_every_entry_and_follows_numbas_thread_count() -> None:
    seen: set[int] = set()
    out = np.zeros(1000, dtype=np.int64)

    def kernel(lo: int, hi: int, out: np.ndarray) -> None:
        seen.add(threading.get_ident())
        out[lo:hi] = np.arange(lo, hi) * 2

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        threads.run_blocks(kernel, out.shape[0], out)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(out, np.arange(1000) * 2)
    assert seen == {threading.get_ident()}  # one thread: the caller's own


def test_run_blocks_raises_a_blocks_error() -> None:
    def kernel(lo: int, hi: int) -> None:
        if lo <= 500 < hi:
            raise ValueError("block failed")

    with pytest.raises(ValueError, match="block failed"):
        threads.run_blocks(kernel, 1000, blocks=8)


def test_graphs_of_any_index_types_share_one_compiled_signature() -> None:
    # classic stores its index arrays as int32, two-player and double-shutter as int64: each
    # kernel still compiles once (the solvers cast at the call), so a first run compiles once
    names = ("classic", "two-player", "double-shutter")
    dtypes = {str(get_variant(n).make().graph().mv_dst.dtype) for n in names}
    assert dtypes == {"int32", "int64"}  # the premise: the graphs differ
    for name in names:
        g = get_variant(name).make().graph()
        sol = solve_rank_order(g)
        policy = policy_eval.optimal(g, sol)
        start = int(np.flatnonzero(g.state_id == get_variant(name).make().start_state())[0])
        policy_eval.evaluate_and_reach(g, policy, start)
        best_moves(g, sol)
    for kernel in (policy_eval._evaluate_layers, policy_eval._reach_layers, ties._best_rows):
        assert len(kernel.signatures) == 1, kernel
