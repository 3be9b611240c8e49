"""Strategy benchmark: every strategy evaluated exactly, and played by Monte Carlo.

`build` calls :func:`build_tables` (a build hook) for each variant: the exact rows of
``benchmarks`` (P(shut) and E[final score] of each strategy by policy evaluation) and the
``reach`` and ``node_reach`` tables (how likely each state and (state, roll) is under each
strategy). The `benchmark` command calls :func:`run_benchmark`, which simulates every strategy and
adds the simulation rows to ``benchmarks``.

A *win* is a game that ends with every tile shut (final score 0), whatever the variant's
objective; ``expected_score`` is the mean final score.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import polars as pl

from pipeline.errors import UsageError
from pipeline.games.base import SolvedView
from pipeline.games.columns import labels
from pipeline.games.shutbox import strategies
from pipeline.games.shutbox.names import DEFAULT_GAMES, DEFAULT_SEED  # noqa: F401
from pipeline.games.shutbox.strategies import TileView
from pipeline.solve import policy_eval, simulate
from pipeline.solve.policy_eval import Policy, Reach

T = TypeVar("T")
R = TypeVar("R")
#: Threads that evaluate strategies (the machine has two cores).
THREADS = 2

#: Column order of benchmarks.parquet (other games may add columns after these).
COLUMNS = (
    "variant",
    "strategy",
    "method",
    "games",
    "wins",
    "win_rate",
    "ci_low",
    "ci_high",
    "expected_score",
    "seconds",
    "games_per_second",
    "seed",
)


@dataclass(frozen=True)
class Evaluated:
    """One strategy on one variant, evaluated exactly."""

    name: str
    policy: Policy
    value: np.ndarray
    """float64 [S]: each state's value under the strategy (its node and move values are not
    kept: eight strategies of a big box would hold them all until the tables are made)."""
    reach: Reach
    win_rate: float
    expected_score: float
    seconds: float


@dataclass(frozen=True)
class Simulated:
    """One strategy on one variant, played by Monte Carlo, next to its exact values."""

    name: str
    result: simulate.SimResult
    seed: int
    ci: tuple[float, float]
    exact_win_rate: float
    exact_score: float

    @property
    def win_rate_inside(self) -> bool:
        """Whether the exact P(shut) lies in the simulation's 95 % Wilson interval."""
        return self.ci[0] <= self.exact_win_rate <= self.ci[1]

    @property
    def score_inside(self) -> bool:
        """Whether the exact E[score] lies within 1.96 standard errors of the simulated mean."""
        se = self.result.score_se
        return abs(self.result.mean_score - self.exact_score) <= 1.959963984540054 * se + 1e-12


def start_index(s: SolvedView) -> int:
    """Graph index of the variant's start state."""
    return int(np.flatnonzero(s.graph.state_id == s.game.start_state())[0])


def view_of(s: SolvedView) -> TileView | None:
    """The variant's tile view (None: the strategies do not apply to this game)."""
    return strategies.tile_view(s.game, s.graph)


def evaluate_strategies(s: SolvedView, names: Sequence[str] | None = None) -> list[Evaluated]:
    """Exact value, reach and outcome of each strategy (all by default); [] without a tile view."""
    view = view_of(s)
    if view is None:
        return []
    g, sol, start = s.graph, s.solve(), start_index(s)
    features = strategies.move_features(g, view, sol.choice)
    picked = _pick(names)
    for name in sorted({key for strategy in picked for key, _ in strategy.keys}):
        features.dense(name)  # ranked once, before the threads share them
    won = view.score == 0
    layers_of = policy_eval.plan(g)

    def one(strategy: strategies.Strategy) -> Evaluated:
        t0 = time.perf_counter()
        policy = strategies.policy_for(strategy, g, sol, features)
        value = policy_eval.evaluate(g, policy, layers_of).value
        reach = policy_eval.reach(g, policy, start, layers_of)
        win_rate = float(reach.end[won].sum())
        score = float(reach.end @ view.score)
        seconds = time.perf_counter() - t0
        return Evaluated(strategy.name, policy, value, reach, win_rate, score, seconds)

    return in_threads(one, picked)


def in_threads(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(x) for x in items]``, on :data:`THREADS` threads when there is more than one item:
    the strategies' numpy and compiled passes release the GIL, so both cores work on them."""
    if len(items) < 2:
        return [fn(x) for x in items]
    with concurrent.futures.ThreadPoolExecutor(THREADS, thread_name_prefix="stb-strategy") as pool:
        return list(pool.map(fn, items))


def _pick(names: Sequence[str] | None) -> list[strategies.Strategy]:
    """The strategies named (all when None); UsageError for an unknown name."""
    if names is None:
        return list(strategies.STRATEGIES)
    unknown = [n for n in names if n not in strategies.NAMES]
    if unknown:
        known = ", ".join(strategies.NAMES)
        raise UsageError(f"unknown strategy {unknown[0]!r}; known strategies: {known}")
    return [strategies.get_strategy(n) for n in dict.fromkeys(names)]


def exact_rows(evaluated: list[Evaluated]) -> pl.DataFrame:
    """The `exact` rows of benchmarks.parquet for one variant."""
    n = len(evaluated)
    null_int = pl.Series([None] * n, dtype=pl.Int64)
    null_float = pl.Series([None] * n, dtype=pl.Float64)
    return pl.DataFrame(
        {
            "strategy": [e.name for e in evaluated],
            "method": ["exact"] * n,
            "games": null_int,
            "wins": null_int,
            "win_rate": [e.win_rate for e in evaluated],
            "ci_low": null_float,
            "ci_high": null_float,
            "expected_score": [e.expected_score for e in evaluated],
            "seconds": [e.seconds for e in evaluated],
            "games_per_second": null_float,
            "seed": null_int,
        },
        schema_overrides={"win_rate": pl.Float64, "expected_score": pl.Float64},
    )


def reach_rows(s: SolvedView, evaluated: list[Evaluated]) -> pl.DataFrame:
    """The reach table rows: every state under every strategy."""
    g = s.graph
    base = pl.DataFrame({"state_id": g.state_id, "tiles": s.states()["tiles"]})
    frames = [
        base.with_columns(
            strategy=pl.lit(e.name),
            reach_prob=pl.Series(e.reach.state),
            end_prob=pl.Series(e.reach.end),
            value=pl.Series(e.value),
        )
        for e in evaluated
    ]
    return pl.concat(frames).select("strategy", pl.exclude("strategy"))


def node_reach_rows(s: SolvedView, evaluated: list[Evaluated]) -> pl.DataFrame:
    """The node_reach table rows: each strategy's move and reach probability at every (state,
    roll) that the strategy or optimal play can reach (the others have probability 0)."""
    g = s.graph
    tiles = s.states()["tiles"]
    n_nodes = g.node_state.shape[0]
    optimal = next((e.reach.node for e in evaluated if e.name == "optimal"), np.zeros(n_nodes))

    def rows(e: Evaluated) -> pl.DataFrame:
        # A node's move is the policy's only move there (null when it mixes or no move is legal).
        played = e.policy.move_prob > 0
        count = np.bincount(g.mv_node[played], minlength=n_nodes)
        row = np.zeros(n_nodes, dtype=np.int64)
        row[g.mv_node[played]] = np.flatnonzero(played)
        label = np.where((count == 1) & (g.mv_label[row] >= 0), g.mv_label[row], -1)
        keep = np.flatnonzero((e.reach.node > 0) | (optimal > 0))
        label, row = label[keep], row[keep]
        dst = np.where(label >= 0, g.mv_dst[row], -1)
        # a label for the rows without a move, so that none is a bare NULL
        kind = np.where(
            label >= 0, 0, np.where(count[keep] > 1, 1, np.where(g.mv_dst[row] >= 0, 2, 3))
        )
        # Describe each distinct move once: describing every node's move is slow for big boxes.
        distinct, inverse = np.unique(label, return_inverse=True)
        states = g.node_state[keep]
        return pl.DataFrame(
            {
                "strategy": labels("strategy", [e.name], np.zeros(keep.shape[0], np.int8)),
                "state_id": g.state_id[states],
                "tiles": tiles.gather(states),
                "roll": pl.Series(g.node_roll[keep], dtype=pl.Int16),
                "reach_prob": e.reach.node[keep],
                "move": s.game.describe_moves(distinct).gather(inverse),
                "next_state_id": pl.Series(
                    np.where(dst >= 0, g.state_id[np.maximum(dst, 0)], 0)
                ).set(pl.Series(dst < 0), None),
                "kind": labels("kind", NODE_KINDS, kind),
            }
        )

    return pl.concat(in_threads(rows, evaluated))


def build_tables(s: SolvedView) -> dict[str, pl.DataFrame]:
    """Build hook: exact benchmark rows, reach and node_reach for one variant (none if n/a)."""
    evaluated = evaluate_strategies(s)
    if not evaluated:
        return {}
    out = {"benchmarks": exact_rows(evaluated)}
    if not s.game.skip_edges:  # like edges, the per-state tables are skipped for huge games
        out["reach"] = reach_rows(s, evaluated)
        out["node_reach"] = node_reach_rows(s, evaluated)
    return out


#: Largest --games (hours of simulation) and --seed (the kernels' seeds are 64-bit integers).
MAX_GAMES = 10**11
#: node_reach.kind labels: a move, several moves mixed, or no legal move (pass or end).
NODE_KINDS = ("move", "mixed", "pass", "end")
MAX_SEED = 2**63 - 1


def simulate_strategies(
    s: SolvedView,
    games: int,
    seed: int,
    names: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Simulated]:
    """Play ``games`` games of each strategy with ``seed`` (same seed, same numbers)."""
    if not 1 <= games <= MAX_GAMES:
        raise UsageError(f"--games must be between 1 and {MAX_GAMES:,}, not {games}")
    if not 0 <= seed <= MAX_SEED:
        raise UsageError(f"--seed must be between 0 and {MAX_SEED}, not {seed}")
    view = view_of(s)
    if view is None:
        raise UsageError(f"variant {s.variant.name!r} has no tile strategies to benchmark")
    evaluated = evaluate_strategies(s, names)
    start = start_index(s)
    out = []
    for e in evaluated:
        if progress is not None:
            progress(e.name)
        compiled = simulate.compile_policy(s.graph, e.policy, start, view.score == 0, view.score)
        simulate.simulate(compiled, 1, seed)  # compile (or load) the kernel outside the timing
        result = simulate.simulate(compiled, games, seed)
        ci = simulate.wilson(result.wins, result.games)
        out.append(Simulated(e.name, result, seed, ci, e.win_rate, e.expected_score))
    return out


def simulation_rows(sims: list[Simulated]) -> pl.DataFrame:
    """The `simulation` rows of benchmarks.parquet for one variant."""
    return pl.DataFrame(
        {
            "strategy": [m.name for m in sims],
            "method": ["simulation"] * len(sims),
            "games": [m.result.games for m in sims],
            "wins": [m.result.wins for m in sims],
            "win_rate": [m.result.win_rate for m in sims],
            "ci_low": [m.ci[0] for m in sims],
            "ci_high": [m.ci[1] for m in sims],
            "expected_score": [m.result.mean_score for m in sims],
            "seconds": [m.result.seconds for m in sims],
            "games_per_second": [m.result.games / m.result.seconds for m in sims],
            "seed": [m.seed for m in sims],
        },
        schema_overrides={"games": pl.Int64, "wins": pl.Int64, "seed": pl.Int64},
    )


def simulate_rows(
    s: SolvedView,
    games: int,
    seed: int,
    names: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Simulated], pl.DataFrame]:
    """Simulate the strategies; the results and their `benchmarks` rows."""
    sims = simulate_strategies(s, games, seed, names, progress)
    return sims, simulation_rows(sims)
