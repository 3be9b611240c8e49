"""Monte Carlo: agrees with exact policy evaluation, and is reproducible for any thread count."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from pipeline.games.registry import get_variant
from pipeline.games.shutbox import benchmark
from pipeline.games.solved import Solved
from pipeline.solve import simulate

Z_999 = 3.290526731491926  # two-sided 99.9 %: 8 strategies x 2 checks stay clear of chance


def solved(name: str) -> Solved:
    variant = get_variant(name)
    game = variant.make()
    return Solved(variant, game, game.graph())


@pytest.fixture(scope="module")
def lever_sims() -> list[benchmark.Simulated]:
    return benchmark.simulate_strategies(solved("lever"), 200_000, seed=7)


def test_simulation_agrees_with_exact_values(lever_sims: list[benchmark.Simulated]) -> None:
    assert len(lever_sims) == 8
    for m in lever_sims:
        r = m.result
        low, high = simulate.wilson(r.wins, r.games, z=Z_999)
        assert low <= m.exact_win_rate <= high, m.name
        assert abs(r.mean_score - m.exact_score) <= Z_999 * r.score_se, m.name


def test_same_seed_same_result_on_any_number_of_threads() -> None:
    s = solved("classic")
    sims = {}
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        try:
            sims[threads] = benchmark.simulate_strategies(s, 70_000, 11, ["random", "greedy"])
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    one, many = sims.values()
    for a, b in zip(one, many, strict=True):
        assert (a.result.wins, a.result.score_sum) == (b.result.wins, b.result.score_sum)
    other = benchmark.simulate_strategies(s, 70_000, 12, ["random"])[0]
    assert other.result.score_sum != one[0].result.score_sum


def test_scanning_the_rolls_equals_the_lookup_table(monkeypatch: pytest.MonkeyPatch) -> None:
    s = solved("one-die-6")
    s.solve()
    evaluated = benchmark.evaluate_strategies(s, ["random"])[0]
    view = benchmark.view_of(s)
    start = benchmark.start_index(s)
    args = (s.graph, evaluated.policy, start, view.score == 0, view.score)
    table = simulate.compile_policy(*args)
    monkeypatch.setattr(simulate, "MAX_LOOKUP", 0)
    scan = simulate.compile_policy(*args)
    assert table.lookup.shape[0] > 0 and scan.lookup.shape[0] == 0
    a, b = simulate.simulate(table, 50_000, 3), simulate.simulate(scan, 50_000, 3)
    assert (a.wins, a.score_sum) == (b.wins, b.score_sum)


@pytest.mark.parametrize("name", ["classic", "double-shutter"])
def test_uniform_nodes_packed_in_the_targets_play_as_the_node_tables_do(name: str) -> None:
    """The random strategy's nodes carry their first playable row and count in the roll
    targets; the same policy with plain node targets (the kernel's general path) plays the
    very same games."""
    from dataclasses import replace

    s = solved(name)
    s.solve()
    evaluated = benchmark.evaluate_strategies(s, ["random"])[0]
    view = benchmark.view_of(s)
    c = simulate.compile_policy(
        s.graph, evaluated.policy, benchmark.start_index(s), view.score == 0, view.score
    )

    def as_nodes(targets: np.ndarray) -> np.ndarray:
        code = -2 - targets.astype(np.int64)
        packed = (targets < -1) & (code & 1 == 1)
        first = code >> (simulate.COUNT_BITS + 1)
        node = np.searchsorted(c.mv_start, first, side="right") - 1
        out = targets.copy()
        out[packed] = (-2 - (node[packed] << 1)).astype(np.int32)
        return out

    assert ((c.row_target < -1) & ((-2 - c.row_target.astype(np.int64)) & 1 == 1)).any()
    plain = replace(c, lookup=as_nodes(c.lookup), row_target=as_nodes(c.row_target))
    a, b = simulate.simulate(c, 60_000, 5), simulate.simulate(plain, 60_000, 5)
    assert (a.wins, a.score_sum, a.score_sq_sum) == (b.wins, b.score_sum, b.score_sq_sum)


def test_wilson_interval() -> None:
    # Wilson (1927) score interval; 50 of 100 at 95 %: 0.40383 .. 0.59617
    low, high = simulate.wilson(50, 100)
    assert abs(low - 0.403831) < 1e-6 and abs(high - 0.596169) < 1e-6
    low, high = simulate.wilson(0, 1000)
    assert low < 1e-12 and 0 < high < 0.004
    with pytest.raises(ValueError):
        simulate.wilson(0, 0)


def test_every_game_ends_in_a_state_the_exact_pass_says_it_can(
    lever_sims: list[benchmark.Simulated],
) -> None:
    # a win is only possible when the exact probability is positive, and vice versa
    for m in lever_sims:
        assert (m.result.wins > 0) == (m.exact_win_rate > 0)
        assert np.isfinite(m.result.mean_score)
