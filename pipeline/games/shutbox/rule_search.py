"""The exhaustive search of the rule family on one box: every rule priced exactly.

Every rule of up to three keys (:func:`pipeline.games.shutbox.rule_family.orders`), with every
one-die threshold where the rules let a player choose one die, is turned into its policy by one
compiled pass (:mod:`pipeline.games.shutbox.rule_keys`). Rules that play the same move at every
node make the same policy (they often do: a second key rarely splits what the first leaves
tied), so each distinct policy is evaluated once, exactly, by backward induction
(:func:`pipeline.solve.policy_eval.evaluate_picks`: thousands of policies per pass, in
parallel, every objective in the same pass).
A policy is credited to the first rule that makes it, in search order (fewer keys first), so a
rule of two keys that plays as a rule of one is listed as the rule of one.

Objectives. A box is priced for its own objective and for the other of P(shut) and the expected
final score where it applies (:func:`objectives`): one graph per objective, with the same states
and moves and the objective's terminal values (:func:`objective_graph`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from pipeline.games.shutbox import strategy_kernels
from pipeline.games.shutbox.rule_family import Rule, orders
from pipeline.games.shutbox.rule_keys import Box, BoxRules, Ranked, encode
from pipeline.graph import PASS, Graph
from pipeline.solve import policy_eval
from pipeline.solve.rank_order import Solution, best_moves, solve_rank_order

#: Distinct policies evaluated per compiled pass: a batch's values (policies x states, per
#: objective) stay near this many entries.
BATCH_ENTRIES = 1 << 21
#: Rules reported per number of keys.
TOP = 5


@dataclass(frozen=True)
class Objective:
    """One objective on a box: its graph, its optimal solution and the start state's index."""

    name: str
    graph: Graph
    solution: Solution
    start: int

    @property
    def maximise(self) -> bool:
        """Whether larger values are better (P(shut), P(target)) or smaller (the score)."""
        return self.graph.maximise

    @property
    def optimum(self) -> float:
        """The value of optimal play from the start."""
        return float(self.solution.value[self.start])

    def gap(self, value: np.ndarray | float) -> np.ndarray:
        """What ``value`` loses against optimal play (>= 0; rounding never makes it negative)."""
        lost = (self.optimum - np.asarray(value)) * (1 if self.maximise else -1)
        return np.maximum(lost, 0.0)

    def better(self, value: np.ndarray) -> np.ndarray:
        """``value`` oriented so that larger is better."""
        return value if self.maximise else -value


def objectives(box: Box, g: Graph, own: Solution, start: int) -> list[Objective]:
    """The objectives a box is searched for: its own (solved already), then P(shut) and the
    expected final score where they are not its own (P(shut) only where every tile can be shut
    and optimal play shuts sometimes)."""
    out = [Objective(box.r.objective, g, own, start)]
    for name in ("shut", "score"):
        if name == box.r.objective:
            continue
        graph = objective_graph(box, g, name)
        found = Objective(name, graph, solve_rank_order(graph), start)
        if name == "shut" and found.optimum <= 0.0:
            continue
        out.append(found)
    return out


def objective_graph(box: Box, g: Graph, name: str) -> Graph:
    """``g`` with the terminal values and final rewards of objective ``name`` (shut: 1 for a shut
    box; score: the final score, minimised; target: 1 for a score within the rules' target)."""
    score = box.scores(g.state_id).astype(np.float64)
    if name == "shut":
        worth = (score == 0).astype(np.float64)
    elif name == "score":
        worth = score
    else:
        target = box.r.target if box.r.target is not None else 0
        worth = (score <= target).astype(np.float64)
    ends = (g.mv_label == PASS) & (g.mv_dst < 0)
    offset = g.mv_offset.copy()
    offset[ends] = worth[g.node_state[g.mv_node[ends]]]
    terminal = np.where(np.isnan(g.terminal), np.nan, worth)
    return dataclasses.replace(g, terminal=terminal, mv_offset=offset, maximise=name != "score")


@dataclass(frozen=True)
class Searched:
    """Every rule of the family on one box, priced for each objective.

    Rule ``r`` is key order ``r % len(orders)`` with threshold ``r // len(orders)``: the key
    orders of :func:`orders`, for each one-die threshold in turn. ``policy[r]`` is the distinct
    policy rule r plays.
    """

    orders: list[tuple[tuple[str, int], ...]]
    thresholds: list[int | None]
    policy: np.ndarray
    """int64 [R]: the distinct policy of each rule."""
    first: np.ndarray
    """int64 [P]: the first rule (in search order) that plays each distinct policy."""
    equivalent: np.ndarray
    """int64 [P]: how many rules play each distinct policy."""
    values: dict[str, np.ndarray]
    """Objective name -> float64 [P]: each distinct policy's value from the start."""
    objectives: dict[str, Objective]

    def rule(self, r: int) -> Rule:
        """Rule number ``r`` of the search."""
        n = len(self.orders)
        return Rule(self.orders[r % n], self.thresholds[r // n])

    @property
    def n_rules(self) -> int:
        """How many rules were searched."""
        return len(self.orders) * len(self.thresholds)

    @cached_property
    def sizes(self) -> np.ndarray:
        """int64 [R]: the number of keys of each rule."""
        per_order = np.array([len(keys) for keys in self.orders], dtype=np.int64)
        return np.tile(per_order, len(self.thresholds))

    @cached_property
    def simplest(self) -> np.ndarray:
        """int64 [P]: the number of keys of each distinct policy's simplest rule."""
        return self.sizes[self.first]

    def best(self, objective: str, size: int, top: int = TOP) -> list[tuple[Rule, int, float]]:
        """The ``top`` best distinct policies whose simplest rule has ``size`` keys, best first:
        (that rule, how many rules play it, its value). Equal values keep search order."""
        obj = self.objectives[objective]
        mine = np.flatnonzero(self.simplest == size)
        value = self.values[objective][mine]
        order = mine[np.lexsort((self.first[mine], -obj.better(value)))][:top]
        return [
            (
                self.rule(int(self.first[p])),
                int(self.equivalent[p]),
                float(self.values[objective][p]),
            )
            for p in order
        ]

    def best_within(self, objective: str, size: int) -> tuple[Rule, float]:
        """The best rule of at most ``size`` keys and its value (ties: the simpler rule)."""
        candidates = [
            (rule, value)
            for k in range(1, size + 1)
            for rule, _, value in self.best(objective, k, 1)
        ]
        obj = self.objectives[objective]
        scores = [float(obj.better(np.array(value))) for _, value in candidates]
        return candidates[max(range(len(candidates)), key=lambda i: (scores[i], -i))]


def search(
    view: BoxRules,
    objectives_: list[Objective],
    max_keys: int = 3,
    progress: Callable[[int, int], None] | None = None,
) -> Searched:
    """Price every rule of up to ``max_keys`` keys (and every one-die threshold) for each
    objective. ``progress(done, total)``: called after each threshold's rules."""
    key_orders = list(orders(max_keys))
    thresholds: list[int | None] = list(view.thresholds) or [None]
    codes = encode([Rule(keys) for keys in key_orders])
    plan = policy_eval.plan(view.graph)  # every objective's graph has the same layers
    graphs = [o.graph for o in objectives_]
    policy_parts: list[np.ndarray] = []
    values: list[np.ndarray] = []
    n_policies = 0
    for done, threshold in enumerate(thresholds, 1):
        ranked = view.ranked(threshold)
        picks, hashes = strategy_kernels.rule_picks(ranked.patterns, ranked.sizes, codes)
        first, inverse = _distinct(picks, hashes)
        values.append(_start_values(view, graphs, ranked, picks[first], plan, objectives_[0].start))
        policy_parts.append(inverse + n_policies)
        n_policies += first.shape[0]
        if progress is not None:
            progress(done, len(thresholds))
    policy = np.concatenate(policy_parts)
    # the first rule of each policy: rules are in search order, so the smallest index
    first_rule = np.full(n_policies, policy.shape[0], dtype=np.int64)
    np.minimum.at(first_rule, policy, np.arange(policy.shape[0]))
    joined = np.concatenate(values, axis=1)
    return Searched(
        key_orders,
        thresholds,
        policy,
        first_rule,
        np.bincount(policy, minlength=n_policies),
        {o.name: joined[x] for x, o in enumerate(objectives_)},
        {o.name: o for o in objectives_},
    )


def _distinct(picks: np.ndarray, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first row of each distinct policy, each row's distinct policy) of ``picks``, by hash,
    with every row checked against its representative (a hash collision falls back to
    comparing the rows themselves)."""
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if np.array_equal(picks, picks[first[inverse]]):
        return first, inverse
    rows = np.ascontiguousarray(picks).view(np.dtype((np.void, picks.shape[1])))[:, 0]
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _start_values(
    view: BoxRules,
    graphs: list[Graph],
    ranked: Ranked,
    picks: np.ndarray,
    plan: policy_eval.Plan,
    start: int,
) -> np.ndarray:
    """float64 [objectives, K]: each objective's value from the start of each policy of
    ``picks``, a batch of policies at a time."""
    classes = np.full(view.starts.shape[0] - 1, -1, dtype=np.int64)
    classes[view.multi] = ranked.pattern_of
    step = max(1, BATCH_ENTRIES // max(view.graph.n_states, 1))
    out = np.empty((len(graphs), picks.shape[0]))
    for lo in range(0, picks.shape[0], step):
        part = picks[lo : lo + step]
        values = policy_eval.evaluate_picks(
            graphs, view.starts[:-1], classes, part, ranked.choice, plan
        )
        out[:, lo : lo + step] = values[:, :, start]
    return out


def optimal_rows(obj: Objective) -> np.ndarray:
    """The solver's move row at every node for the objective (ties: the largest label)."""
    rows, _ = best_moves(obj.graph, obj.solution)
    return rows
