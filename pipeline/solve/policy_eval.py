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

from dataclasses import dataclass

import numpy as np

from pipeline.graph import Graph, group_starts
from pipeline.solve.rank_order import Solution, best_moves, layers

WEIGHT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Policy:
    """A fixed policy on a graph: move probabilities per move row and a choice per state."""

    move_prob: np.ndarray
    """float64 [M]: probability of playing each move row at its node (sums to 1 per node)."""
    choice: np.ndarray
    """int64 [S]: the choice made before the roll in each state (-1 where there is none)."""

    def validate(self, g: Graph) -> None:
        """Raise ValueError when the policy does not fit the graph."""
        if self.move_prob.shape != g.mv_node.shape or self.choice.shape != (g.n_states,):
            raise ValueError("policy arrays do not match the graph's shapes")
        if np.any(self.move_prob < 0):
            raise ValueError("move probabilities must not be negative")
        total = np.bincount(g.mv_node, weights=self.move_prob, minlength=g.node_state.shape[0])
        if np.any(np.abs(total - 1.0) > WEIGHT_TOLERANCE):
            raise ValueError("move probabilities must sum to 1 at every decision node")
        chosen = np.zeros(g.n_states, dtype=bool)
        chosen[g.ch_state[chosen_rows(g, self.choice)]] = True
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


def evaluate(g: Graph, policy: Policy, layers_of: Plan | None = None) -> PolicyValue:
    """Value of every state, node and move under ``policy``, by backward induction in rank order.

    ``layers_of``: the graph's :func:`plan`, when several policies are evaluated on one graph.
    """
    if g.cyclic:
        raise ValueError("policy evaluation runs in rank order, so it needs an acyclic graph")
    policy.validate(g)
    p = layers_of or plan(g)
    value = np.full(g.n_states, np.nan)
    node_value = np.full(g.node_state.shape[0], np.nan)
    move_value = np.full(g.mv_node.shape[0], np.nan)
    chosen = chosen_mask(g, policy.choice)
    prob = g.ch_prob
    for states, moves, chance in zip(p.states, p.moves, p.chance, strict=True):
        term = states[~np.isnan(g.terminal[states])]
        value[term] = g.terminal[term]
        if moves.shape[0]:
            dst = g.mv_dst[moves]
            succ = np.where(dst >= 0, value[np.maximum(dst, 0)], 0.0)
            vals = g.mv_offset[moves] + g.mv_scale[moves] * succ
            move_value[moves] = vals
            nodes = g.mv_node[moves]
            starts = group_starts(nodes)
            node_value[nodes[starts]] = np.add.reduceat(policy.move_prob[moves] * vals, starts)
        r = chance[chosen[chance]]
        if r.shape[0]:
            owners = g.ch_state[r]
            starts = group_starts(owners)
            contrib = prob[r] * node_value[g.ch_node[r]]
            value[owners[starts]] = np.add.reduceat(contrib, starts)
    if np.any(np.isnan(value)):
        raise ValueError("graph is not acyclic in rank order: some states were never valued")
    return PolicyValue(value, node_value, move_value)


def reach(g: Graph, policy: Policy, start: int, layers_of: Plan | None = None) -> Reach:
    """Probability of visiting each state and node from graph index ``start`` under ``policy``.

    A forward pass in decreasing rank order: every move leads to a lower rank, so a state's
    probability is complete once all higher ranks have been pushed forward.
    """
    policy.validate(g)
    p = layers_of or plan(g)
    state = np.zeros(g.n_states)
    node = np.zeros(g.node_state.shape[0])
    state[start] = 1.0
    chosen = chosen_mask(g, policy.choice)
    prob = g.ch_prob
    n_nodes = node.shape[0]
    for moves, chance in zip(p.moves[::-1], p.chance[::-1], strict=True):
        r = chance[chosen[chance]]
        if r.shape[0]:
            node += np.bincount(
                g.ch_node[r], weights=state[g.ch_state[r]] * prob[r], minlength=n_nodes
            )
        moves = moves[g.mv_dst[moves] >= 0]
        if moves.shape[0]:
            flow = node[g.mv_node[moves]] * policy.move_prob[moves]
            state += np.bincount(g.mv_dst[moves], weights=flow, minlength=g.n_states)
    stuck = g.mv_dst < 0
    stuck_flow = node[g.mv_node[stuck]] * policy.move_prob[stuck]
    end = np.bincount(g.node_state[g.mv_node[stuck]], weights=stuck_flow, minlength=g.n_states)
    terminal = ~np.isnan(g.terminal)
    end[terminal] += state[terminal]
    return Reach(state, node, end)


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
