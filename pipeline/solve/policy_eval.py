"""Exact evaluation of a fixed (possibly mixed) policy on a game graph, backward and forward.

A policy gives every move row the probability that the mover plays it at its decision node (the
weights of a node's rows sum to 1; a deterministic policy puts 1 on one row) and every state the
choice it makes before the roll. :func:`evaluate` computes the value of every state under the
policy by backward induction in rank order (the same layers as :mod:`rank_order`, with the best
move replaced by the policy's average); :func:`reach` computes the probability of reaching every
state and decision node from a start state by a forward pass in decreasing rank order, and the
distribution of where games end. Both are exact up to floating point: no sampling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from pipeline.graph import Graph, as_index
from pipeline.solve import threads
from pipeline.solve.compiled import kernel
from pipeline.solve.rank_order import Solution, best_moves, layers

WEIGHT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Policy:
    """A fixed policy on a graph: move probabilities per move row and a choice per state."""

    move_prob: np.ndarray
    """float64 [M]: probability of playing each move row at its node (sums to 1 per node)."""
    choice: np.ndarray
    """int64 [S]: the choice made before the roll in each state (-1 where there is none)."""


@dataclass(frozen=True)
class PolicySet:
    """Several policies on one graph that roll the same dice (one ``choice``), stacked for the
    compiled passes of :func:`evaluate_many` and :func:`reach_many`. Build it with :func:`stack`
    (which validates every policy)."""

    move_prob: np.ndarray
    """float64 [K, M]: row k is policy k's move probabilities."""
    choice: np.ndarray
    """int64 [S]: the choice every policy makes before the roll in each state."""


def stack(g: Graph, policies: Sequence[Policy]) -> PolicySet:
    """The policies as one :class:`PolicySet`; ValueError when one does not fit ``g`` or when
    they make different dice choices."""
    if not policies:
        raise ValueError("no policy to evaluate")
    choice = policies[0].choice
    if any(not np.array_equal(p.choice, choice) for p in policies[1:]):
        raise ValueError("policies evaluated together must make the same dice choices")
    if any(p.move_prob.shape != g.mv_node.shape for p in policies):
        raise ValueError("policy arrays do not match the graph's shapes")
    rows = [np.ascontiguousarray(p.move_prob, dtype=np.float64) for p in policies]
    return checked(g, rows[0].reshape(1, -1) if len(rows) == 1 else np.stack(rows), choice)


def checked(g: Graph, move_prob: np.ndarray, choice: np.ndarray) -> PolicySet:
    """The :class:`PolicySet` of policies already stacked as rows of ``move_prob`` [K, M]
    (no copy when it is C-contiguous float64), after validating every row."""
    if move_prob.ndim != 2 or move_prob.shape[1] != g.mv_node.shape[0]:
        raise ValueError("policy arrays do not match the graph's shapes")
    _check(g, move_prob, choice)
    return PolicySet(
        np.ascontiguousarray(move_prob, dtype=np.float64), np.asarray(choice, dtype=np.int64)
    )


def _check(g: Graph, move_prob: np.ndarray, choice: np.ndarray) -> None:
    """Raise ValueError unless every row of ``move_prob`` [K, M] is a distribution over each
    node's moves and ``choice`` picks a choice the rules offer in every non-terminal state."""
    if choice.shape != (g.n_states,):
        raise ValueError("policy arrays do not match the graph's shapes")
    if np.any(move_prob < 0):
        raise ValueError("move probabilities must not be negative")
    for row in move_prob:
        total = np.bincount(g.mv_node, weights=row, minlength=g.node_state.shape[0])
        if np.any(np.abs(total - 1.0) > WEIGHT_TOLERANCE):
            raise ValueError("move probabilities must sum to 1 at every decision node")
    chosen = np.zeros(g.n_states, dtype=bool)
    chosen[g.ch_state[chosen_rows(g, choice)]] = True
    if np.any(np.isnan(g.terminal) & ~chosen):
        raise ValueError("every non-terminal state needs a choice the rules offer")


@dataclass(frozen=True)
class PolicyValue:
    """Values of a graph's states, nodes and moves when the mover follows a fixed policy."""

    value: np.ndarray
    """float64 [S]: value of each state under the policy."""
    node_value: np.ndarray
    """float64 [N]: value of each decision node (policy's average over its moves)."""
    move_value: np.ndarray
    """float64 [M]: value of each move row (its successor valued under the policy)."""


@dataclass(frozen=True)
class Reach:
    """Where a policy's games go, from one start state."""

    state: np.ndarray
    """float64 [S]: probability that a game visits each state."""
    node: np.ndarray
    """float64 [N]: probability that a game reaches each decision node (state and roll)."""
    end: np.ndarray
    """float64 [S]: probability that a game ends in each state (terminal, or stuck there)."""


def deterministic(g: Graph, rows: np.ndarray, choice: np.ndarray) -> Policy:
    """The policy playing move row ``rows[n]`` at every node ``n``."""
    if rows.shape != g.node_state.shape or np.any(g.mv_node[rows] != np.arange(rows.shape[0])):
        raise ValueError("a deterministic policy needs one move row of each node, in node order")
    prob = np.zeros(g.mv_node.shape[0])
    prob[rows] = 1.0
    return Policy(prob, np.asarray(choice, dtype=np.int64))


def uniform(g: Graph, choice: np.ndarray) -> Policy:
    """The mixed policy playing every move row of a node with equal probability."""
    counts = np.bincount(g.mv_node, minlength=g.node_state.shape[0])
    return Policy(1.0 / counts[g.mv_node], np.asarray(choice, dtype=np.int64))


def optimal(g: Graph, sol: Solution) -> Policy:
    """The solver's policy: its best move (ties to the largest label) and its choice."""
    rows, _ = best_moves(g, sol)
    return deterministic(g, rows, sol.choice)


def index_layers(keys: np.ndarray, order: np.ndarray) -> list[np.ndarray]:
    """:func:`rank_order.layers` as index arrays (it returns slices when keys are sorted)."""
    n = np.arange(keys.shape[0])
    return [n[part] if isinstance(part, slice) else part for part in layers(keys, order)]


@dataclass(frozen=True)
class Plan:
    """A graph's rank layers, in increasing rank: computed once, shared by every policy."""

    states: list[np.ndarray]
    """State indices of each layer."""
    moves: list[np.ndarray]
    """Move rows of each layer (grouped by node)."""
    chance: list[np.ndarray]
    """Chance rows of each layer (grouped by state, then choice)."""

    @cached_property
    def flat(self) -> tuple[np.ndarray, ...]:
        """The layers as flat index arrays and offsets, for the compiled passes: states,
        state offsets, moves, move offsets, chance rows, chance offsets."""
        out: list[np.ndarray] = []
        for parts in (self.states, self.moves, self.chance):
            sizes = [p.shape[0] for p in parts]
            out.append(np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64))
            out.append(np.concatenate(([0], np.cumsum(sizes))).astype(np.int64))
        return tuple(out)


def plan(g: Graph) -> Plan:
    """The rank layers of ``g``."""
    ranks = np.unique(g.rank)
    return Plan(
        index_layers(g.rank, ranks),
        index_layers(g.rank[g.node_state[g.mv_node]], ranks),
        index_layers(g.rank[g.ch_state], ranks),
    )


def chosen_rows(g: Graph, choice: np.ndarray) -> np.ndarray:
    """Indices of the chance rows that belong to each state's chosen choice."""
    return np.flatnonzero(chosen_mask(g, choice))


def chosen_mask(g: Graph, choice: np.ndarray) -> np.ndarray:
    """Whether each chance row belongs to its state's chosen choice."""
    return g.ch_choice == choice[g.ch_state]


def evaluate(g: Graph, policy: Policy) -> PolicyValue:
    """Value of every state, node and move under ``policy``, by backward induction in rank order.

    The compiled pass sums each node's moves and each state's rolls in row order, as numpy's
    ``add.reduceat`` over the layers does.
    """
    value, node_value, move_value = _evaluate(g, stack(g, [policy]), None, keep_moves=True)
    return PolicyValue(value[:, 0], node_value[:, 0], move_value[:, 0])


def evaluate_many(g: Graph, policies: PolicySet, layers_of: Plan | None = None) -> np.ndarray:
    """The state values of several policies that roll the same dice, in one pass over the
    graph: float64 [S, K], column k for policy k. Each column equals :func:`evaluate`'s values
    of that policy exactly (the same sums in the same order)."""
    return _evaluate(g, policies, layers_of, keep_moves=False)[0]


def _evaluate(
    g: Graph, policies: PolicySet, layers_of: Plan | None, keep_moves: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """State, node and (with ``keep_moves``) move values of each policy, [*, K]."""
    if g.cyclic:
        raise ValueError("policy evaluation runs in rank order, so it needs an acyclic graph")
    move_prob, chosen = policies.move_prob, chosen_mask(g, policies.choice)
    k = move_prob.shape[0]
    p = layers_of or plan(g)
    value = np.full((g.n_states, k), np.nan)
    node_value = np.full((g.node_state.shape[0], k), np.nan)
    move_value = np.full((g.mv_node.shape[0] if keep_moves else 0, k), np.nan)
    _evaluate_layers(  # type: ignore[call-arg]  # numba's stub does not see *args
        *p.flat,
        g.terminal,
        as_index(g.mv_dst),
        as_index(g.mv_node),
        g.mv_offset,
        g.mv_scale.astype(np.float64),
        move_prob,
        chosen,
        as_index(g.ch_state),
        as_index(g.ch_node),
        g.ch_prob,
        value,
        node_value,
        move_value,
        np.zeros(k),
    )
    if np.any(np.isnan(value)):
        raise ValueError("graph is not acyclic in rank order: some states were never valued")
    return value, node_value, move_value


@kernel
def _evaluate_layers(
    states, states_off, moves, moves_off, chance, chance_off,
    terminal, dst, mv_node, offset, scale, move_prob, chosen, ch_state, ch_node, prob,
    value, node_value, move_value, acc,
):  # fmt: skip
    # ``acc``: the caller's room for a value per policy
    k_all = move_prob.shape[0]
    keep_moves = move_value.shape[0] > 0
    for layer in range(states_off.shape[0] - 1):
        for j in range(states_off[layer], states_off[layer + 1]):
            i = states[j]
            if not np.isnan(terminal[i]):
                for k in range(k_all):
                    value[i, k] = terminal[i]
        group = -1
        for j in range(moves_off[layer], moves_off[layer + 1]):
            m = moves[j]
            if mv_node[m] != group:
                if group >= 0:
                    for k in range(k_all):
                        node_value[group, k] = acc[k]
                group = mv_node[m]
                first = True
            else:
                first = False
            for k in range(k_all):
                succ = value[dst[m], k] if dst[m] >= 0 else 0.0
                v = offset[m] + scale[m] * succ
                if keep_moves:
                    move_value[m, k] = v
                acc[k] = move_prob[k, m] * v if first else acc[k] + move_prob[k, m] * v
        if group >= 0:
            for k in range(k_all):
                node_value[group, k] = acc[k]
        group = -1
        for j in range(chance_off[layer], chance_off[layer + 1]):
            r = chance[j]
            if not chosen[r]:
                continue
            first = ch_state[r] != group
            if first:
                if group >= 0:
                    for k in range(k_all):
                        value[group, k] = acc[k]
                group = ch_state[r]
            for k in range(k_all):
                c = prob[r] * node_value[ch_node[r], k]
                acc[k] = c if first else acc[k] + c
        if group >= 0:
            for k in range(k_all):
                value[group, k] = acc[k]


def evaluate_picks(
    graphs: Sequence[Graph],
    base: np.ndarray,
    node_class: np.ndarray,
    picks: np.ndarray,
    choice: np.ndarray,
    layers_of: Plan | None = None,
) -> np.ndarray:
    """The state values of many deterministic policies that roll the same dice and differ only
    in which move they play at some nodes, on one or more graphs of the same structure (the
    same game priced for several objectives): float64 [G, K, S].

    Policy k plays move row ``base[n] + picks[k, node_class[n]]`` at every node n of class
    ``node_class[n] >= 0``, and ``base[n]`` at the others: a policy is its K x C picks, not
    K x M weights, so tens of thousands of candidate rules are priced in a few passes. Policies
    run in parallel, each in rank order, every graph in the same pass; a node's value is its
    move's value and a state's the sum of its rolls in row order, so each ``[g, k]`` equals
    :func:`evaluate`'s values of that policy on ``graphs[g]`` exactly.
    """
    g = graphs[0]
    if g.cyclic:
        raise ValueError("policy evaluation runs in rank order, so it needs an acyclic graph")
    if any(not same_structure(g, other) for other in graphs[1:]):
        raise ValueError("graphs evaluated together must have the same states, rolls and moves")
    base, node_class, picks = _checked_picks(g, base, node_class, picks)
    choice = np.asarray(choice, dtype=np.int64)
    if choice.shape != (g.n_states,):
        raise ValueError("policy arrays do not match the graph's shapes")
    p = layers_of or plan(g)
    states, states_off, _, _, chance, chance_off = p.flat
    terminal = np.stack([x.terminal for x in graphs])
    offset = np.stack([x.mv_offset for x in graphs])
    scale = np.stack([x.mv_scale.astype(np.float64) for x in graphs])
    value = np.full((len(graphs), picks.shape[0], g.n_states), np.nan)
    # policies in parallel: blocks of them on threads (one serial kernel, quick to compile)
    _evaluate_picks_layers(
        picks, states, states_off, chance, chance_off, terminal, as_index(g.mv_dst), offset,
        scale, base, node_class, chosen_mask(g, choice), as_index(g.ch_state),
        as_index(g.ch_node), g.ch_prob, value, np.zeros((picks.shape[0], len(graphs))),
    )  # fmt: skip
    if np.any(np.isnan(value)):
        raise ValueError("some states were never valued: a choice the rules do not offer?")
    return value


def _checked_picks(
    g: Graph, base: np.ndarray, node_class: np.ndarray, picks: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The picks' arrays as the compiled pass reads them; ValueError unless every policy plays
    a move row of each node."""
    n_nodes = g.node_state.shape[0]
    base = np.ascontiguousarray(base, dtype=np.int64)
    node_class = np.ascontiguousarray(node_class, dtype=np.int64)
    picks = np.ascontiguousarray(picks)
    if base.shape != (n_nodes,) or node_class.shape != (n_nodes,) or picks.ndim != 2:
        raise ValueError("base rows and classes need one entry per node, picks one row per policy")
    starts = g.move_starts()
    if np.any(base < starts[:-1]) or np.any(base >= starts[1:]):
        raise ValueError("a deterministic policy needs one move row of each node, in node order")
    n_classes = picks.shape[1]
    if np.any(node_class >= n_classes) or (picks.size and picks.min() < 0):
        raise ValueError("a node's class must be a column of the picks, and picks >= 0")
    # the largest pick each class allows: the fewest moves left after the base row in its nodes
    room = np.full(n_classes, np.iinfo(np.int64).max)
    classed = node_class >= 0
    np.minimum.at(room, node_class[classed], (starts[1:] - 1 - base)[classed])
    if picks.size and np.any(picks.max(axis=0) > room):
        raise ValueError("a pick goes past the last move of a node of its class")
    return base, node_class, picks


@threads.on_blocks
@kernel
def _evaluate_picks_layers(
    k_lo, k_hi, picks, states, states_off, chance, chance_off, terminal, dst, offset, scale,
    base, node_class, chosen, ch_state, ch_node, prob, value, sums,
):  # fmt: skip
    """Policies ``k_lo`` to ``k_hi - 1`` of :func:`evaluate_picks`, each in rank order
    (``sums[k]``: room for policy k's sum on each graph)."""
    n_graphs = value.shape[0]
    for k in range(k_lo, k_hi):
        acc = sums[k]
        for layer in range(states_off.shape[0] - 1):
            for j in range(states_off[layer], states_off[layer + 1]):
                i = states[j]
                for x in range(n_graphs):
                    if not np.isnan(terminal[x, i]):
                        value[x, k, i] = terminal[x, i]
            group = -1
            for j in range(chance_off[layer], chance_off[layer + 1]):
                r = chance[j]
                if not chosen[r]:
                    continue
                first = ch_state[r] != group
                if first:
                    if group >= 0:
                        for x in range(n_graphs):
                            value[x, k, group] = acc[x]
                    group = ch_state[r]
                node = ch_node[r]
                m = base[node]
                if node_class[node] >= 0:
                    m += picks[k, node_class[node]]
                d = dst[m]
                for x in range(n_graphs):
                    succ = value[x, k, d] if d >= 0 else 0.0
                    c = prob[r] * (offset[x, m] + scale[x, m] * succ)
                    acc[x] = c if first else acc[x] + c
            if group >= 0:
                for x in range(n_graphs):
                    value[x, k, group] = acc[x]


def evaluate_and_reach(
    g: Graph, policy: Policy, start: int, layers_of: Plan | None = None
) -> tuple[PolicyValue, Reach]:
    """:func:`evaluate` and :func:`reach` of one policy, which is validated once."""
    policies = stack(g, [policy])
    value, node_value, move_value = _evaluate(g, policies, layers_of, keep_moves=True)
    found = PolicyValue(value[:, 0], node_value[:, 0], move_value[:, 0])
    return found, reach_many(g, policies, start, layers_of)[0]


def reach(g: Graph, policy: Policy, start: int, layers_of: Plan | None = None) -> Reach:
    """Probability of visiting each state and node from graph index ``start`` under ``policy``.

    A forward pass in decreasing rank order: every move leads to a lower rank, so a state's
    probability is complete once all higher ranks have been pushed forward. Each layer's flow
    into a state is summed first and then added, as numpy's ``bincount`` per layer does.
    """
    return reach_many(g, stack(g, [policy]), start, layers_of)[0]


def reach_many(
    g: Graph, policies: PolicySet, start: int, layers_of: Plan | None = None
) -> list[Reach]:
    """:func:`reach` of several policies that roll the same dice, in one pass over the graph
    (each result equals that policy's own :func:`reach` exactly)."""
    move_prob, chosen = policies.move_prob, chosen_mask(g, policies.choice)
    k = move_prob.shape[0]
    p = layers_of or plan(g)
    state = np.zeros((g.n_states, k))
    node = np.zeros((g.node_state.shape[0], k))
    state[start, :] = 1.0
    _, _, moves, moves_off, chance, chance_off = p.flat
    _reach_layers(
        moves, moves_off, chance, chance_off,
        as_index(g.mv_dst), as_index(g.mv_node), move_prob, chosen, as_index(g.ch_state),
        as_index(g.ch_node), g.ch_prob, state, node, np.zeros(state.shape),
        np.zeros(state.shape[0], dtype=np.bool_),
    )  # fmt: skip
    stuck = np.flatnonzero(g.mv_dst < 0)
    at = g.node_state[g.mv_node[stuck]]
    terminal = ~np.isnan(g.terminal)
    out = []
    for i in range(k):
        node_i = np.ascontiguousarray(node[:, i])
        state_i = np.ascontiguousarray(state[:, i])
        stuck_flow = node_i[g.mv_node[stuck]] * move_prob[i, stuck]
        end = np.bincount(at, weights=stuck_flow, minlength=g.n_states)
        end[terminal] += state_i[terminal]
        out.append(Reach(state_i, node_i, end))
    return out


@kernel
def _reach_layers(
    moves, moves_off, chance, chance_off,
    dst, mv_node, move_prob, chosen, ch_state, ch_node, prob, state, node, flow, touched,
):  # fmt: skip
    # flow and touched (zeros, a state's inflow of this layer) come from the caller
    k_all = move_prob.shape[0]
    for layer in range(moves_off.shape[0] - 2, -1, -1):
        for j in range(chance_off[layer], chance_off[layer + 1]):
            r = chance[j]
            if chosen[r]:
                for k in range(k_all):
                    node[ch_node[r], k] += state[ch_state[r], k] * prob[r]
        for j in range(moves_off[layer], moves_off[layer + 1]):
            m = moves[j]
            d = dst[m]
            if d >= 0:
                for k in range(k_all):
                    flow[d, k] += node[mv_node[m], k] * move_prob[k, m]
                touched[d] = True
        for j in range(moves_off[layer], moves_off[layer + 1]):
            d = dst[moves[j]]
            if d >= 0 and touched[d]:
                for k in range(k_all):
                    state[d, k] += flow[d, k]
                    flow[d, k] = 0.0
                touched[d] = False


def same_structure(a: Graph, b: Graph) -> bool:
    """Whether two graphs have the same states, rolls and moves (values may differ)."""
    names = (
        "state_id",
        "rank",
        "ch_state",
        "ch_choice",
        "ch_count",
        "ch_denom",
        "ch_node",
        "node_state",
        "node_roll",
        "mv_node",
        "mv_dst",
        "mv_label",
    )
    same_terminal = np.array_equal(np.isnan(a.terminal), np.isnan(b.terminal))
    return same_terminal and all(np.array_equal(getattr(a, n), getattr(b, n)) for n in names)
