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

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipeline.errors import UsageError
from pipeline.games.base import SolvedView
from pipeline.games.columns import labels
from pipeline.games.shutbox import strategies, strategy_kernels
from pipeline.games.shutbox.strategies import TileView
from pipeline.solve import policy_eval, simulate
from pipeline.solve.policy_eval import Policy, Reach

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
    """Exact value, reach and outcome of each strategy (all by default); [] without a tile view.

    Every strategy rolls the dice the solver rolls, so all of them are evaluated together: one
    compiled pass over the graph for their values and one for their reach. A strategy's
    ``seconds`` is the time to make its policy plus an equal share of those passes.
    """
    view = view_of(s)
    if view is None:
        return []
    g, sol, start = s.graph, s.solve(), start_index(s)
    features = strategies.move_features(g, view, sol.choice)
    picked = _pick(names)
    # the policies are made straight into the rows of the array the passes read
    move_prob = np.empty((len(picked), g.mv_node.shape[0]))
    choice = np.asarray(sol.choice, dtype=np.int64)  # every strategy rolls as the solver does
    policies, seconds = [], []
    for k, strategy in enumerate(picked):
        t0 = time.perf_counter()
        made = strategies.policy_for(strategy, g, sol, features)
        move_prob[k] = made.move_prob
        policies.append(Policy(move_prob[k], choice))
        seconds.append(time.perf_counter() - t0)
    del features, made  # the features' ranks are as big as the policies: dropped first
    t0 = time.perf_counter()
    stacked = policy_eval.checked(g, move_prob, choice)
    layers_of = policy_eval.plan(g)
    values = policy_eval.evaluate_many(g, stacked, layers_of)
    reaches = policy_eval.reach_many(g, stacked, start, layers_of)
    share = (time.perf_counter() - t0) / len(picked)
    won = view.score == 0
    return [
        Evaluated(
            strategy.name,
            policy,
            np.ascontiguousarray(values[:, k]),
            reached,
            float(reached.end[won].sum()),
            # numpy's own sum, not `@`: BLAS splits a dot product over however many threads
            # it has free at the moment (one when another thread holds them), so the last
            # digit varied from build to build, and the table with it
            float((reached.end * view.score).sum()),
            seconds[k] + share,
        )
        for k, (strategy, policy, reached) in enumerate(zip(picked, policies, reaches, strict=True))
    ]


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
    """The reach table rows: every state under every strategy (the start state first)."""
    g = s.graph
    order = _start_first(g.state_id, s.game.start_state())
    base = pl.DataFrame({"state_id": g.state_id[order], "tiles": s.states()["tiles"].gather(order)})
    frames = [
        base.with_columns(
            strategy=pl.lit(e.name),
            reach_prob=pl.Series(e.reach.state[order]),
            end_prob=pl.Series(e.reach.end[order]),
            value=pl.Series(e.value[order]),
        )
        for e in evaluated
    ]
    return pl.concat(frames).select("strategy", pl.exclude("strategy"))


def _start_first(ids: np.ndarray, start: int) -> np.ndarray:
    """Positions of ``ids`` in the order the tables list rows: the start state first, then by
    state id, equal ids in their order (as :func:`pipeline.stages.frames.start_first` sorts)."""
    return np.lexsort((ids, ids != start))


def node_reach_rows(s: SolvedView, evaluated: list[Evaluated]) -> pl.DataFrame:
    """The node_reach table rows: each strategy's move and reach probability at every (state,
    roll) that the strategy or optimal play can reach (the others have probability 0).

    All strategies' rows are made together, in the table's order (strategy, then the start
    state first, then state id), each distinct move described once.
    """
    g = s.graph
    n_nodes = g.node_state.shape[0]
    optimal = next((e.reach.node for e in evaluated if e.name == "optimal"), np.zeros(n_nodes))
    order = _start_first(g.state_id[g.node_state], s.game.start_state())
    reached_by_optimal = optimal[order] > 0
    nodes, probs, labels_, kinds, dsts = [], [], [], [], []
    for e in evaluated:
        # A node's move is the policy's only move there (null when it mixes or no move is legal).
        count, row = strategy_kernels.played_rows(e.policy.move_prob, g.mv_node, n_nodes)
        keep = order[(e.reach.node[order] > 0) | reached_by_optimal]
        count, row = count[keep], row[keep]
        label = np.where((count == 1) & (g.mv_label[row] >= 0), g.mv_label[row], -1)
        dsts.append(np.where(label >= 0, g.mv_dst[row], -1))
        # a label for the rows without a move, so that none is a bare NULL
        kinds.append(
            np.where(label >= 0, 0, np.where(count > 1, 1, np.where(g.mv_dst[row] >= 0, 2, 3)))
        )
        nodes.append(keep)
        probs.append(e.reach.node[keep])
        labels_.append(label)
    sizes = [n.shape[0] for n in nodes]
    node = np.concatenate(nodes)
    dst = np.concatenate(dsts)
    states = g.node_state[node]
    code = np.repeat(np.arange(len(evaluated), dtype=np.int8), sizes)
    return pl.DataFrame(
        {
            "strategy": labels("strategy", [e.name for e in evaluated], code),
            "state_id": g.state_id[states],
            "tiles": s.states()["tiles"].gather(states),
            "roll": pl.Series(g.node_roll[node], dtype=pl.Int16),
            "reach_prob": np.concatenate(probs),
            "move": s.game.describe_moves(np.concatenate(labels_)),
            "next_state_id": pl.Series(np.where(dst >= 0, g.state_id[np.maximum(dst, 0)], 0)).set(
                pl.Series(dst < 0), None
            ),
            "kind": labels("kind", NODE_KINDS, np.concatenate(kinds)),
        }
    )


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
