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
from functools import cached_property

import numpy as np
from numba import njit

from pipeline.graph import Graph
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


def evaluate(g: Graph, policy: Policy, layers_of: Plan | None = None) -> PolicyValue:
    """Value of every state, node and move under ``policy``, by backward induction in rank order.

    ``layers_of``: the graph's :func:`plan`, when several policies are evaluated on one graph.
    The compiled pass sums each node's moves and each state's rolls in row order, as numpy's
    ``add.reduceat`` over the layers does.
    """
    if g.cyclic:
        raise ValueError("policy evaluation runs in rank order, so it needs an acyclic graph")
    policy.validate(g)
    p = layers_of or plan(g)
    value = np.full(g.n_states, np.nan)
    node_value = np.full(g.node_state.shape[0], np.nan)
    move_value = np.full(g.mv_node.shape[0], np.nan)
    _evaluate_layers(  # type: ignore[call-arg]  # numba's stub does not see *args
        *p.flat,
        g.terminal,
        g.mv_dst,
        g.mv_node,
        g.mv_offset,
        g.mv_scale.astype(np.float64),
        policy.move_prob,
        chosen_mask(g, policy.choice),
        g.ch_state,
        g.ch_node,
        g.ch_prob,
        value,
        node_value,
        move_value,
    )
    if np.any(np.isnan(value)):
        raise ValueError("graph is not acyclic in rank order: some states were never valued")
    return PolicyValue(value, node_value, move_value)


@njit(cache=True, nogil=True)
def _evaluate_layers(
    states, states_off, moves, moves_off, chance, chance_off,
    terminal, dst, mv_node, offset, scale, move_prob, chosen, ch_state, ch_node, prob,
    value, node_value, move_value,
):  # fmt: skip
    for layer in range(states_off.shape[0] - 1):
        for j in range(states_off[layer], states_off[layer + 1]):
            i = states[j]
            if not np.isnan(terminal[i]):
                value[i] = terminal[i]
        group, acc = -1, 0.0
        for j in range(moves_off[layer], moves_off[layer + 1]):
            m = moves[j]
            succ = value[dst[m]] if dst[m] >= 0 else 0.0
            v = offset[m] + scale[m] * succ
            move_value[m] = v
            if mv_node[m] != group:
                if group >= 0:
                    node_value[group] = acc
                group, acc = mv_node[m], move_prob[m] * v
            else:
                acc += move_prob[m] * v
        if group >= 0:
            node_value[group] = acc
        group, acc = -1, 0.0
        for j in range(chance_off[layer], chance_off[layer + 1]):
            r = chance[j]
            if not chosen[r]:
                continue
            c = prob[r] * node_value[ch_node[r]]
            if ch_state[r] != group:
                if group >= 0:
                    value[group] = acc
                group, acc = ch_state[r], c
            else:
                acc += c
        if group >= 0:
            value[group] = acc


def reach(g: Graph, policy: Policy, start: int, layers_of: Plan | None = None) -> Reach:
    """Probability of visiting each state and node from graph index ``start`` under ``policy``.

    A forward pass in decreasing rank order: every move leads to a lower rank, so a state's
    probability is complete once all higher ranks have been pushed forward. Each layer's flow
    into a state is summed first and then added, as numpy's ``bincount`` per layer does.
    """
    policy.validate(g)
    p = layers_of or plan(g)
    state = np.zeros(g.n_states)
    node = np.zeros(g.node_state.shape[0])
    state[start] = 1.0
    _, _, moves, moves_off, chance, chance_off = p.flat
    _reach_layers(
        moves, moves_off, chance, chance_off,
        g.mv_dst, g.mv_node, policy.move_prob, chosen_mask(g, policy.choice),
        g.ch_state, g.ch_node, g.ch_prob, state, node,
    )  # fmt: skip
    stuck = g.mv_dst < 0
    stuck_flow = node[g.mv_node[stuck]] * policy.move_prob[stuck]
    end = np.bincount(g.node_state[g.mv_node[stuck]], weights=stuck_flow, minlength=g.n_states)
    terminal = ~np.isnan(g.terminal)
    end[terminal] += state[terminal]
    return Reach(state, node, end)


@njit(cache=True, nogil=True)
def _reach_layers(
    moves, moves_off, chance, chance_off,
    dst, mv_node, move_prob, chosen, ch_state, ch_node, prob, state, node,
):  # fmt: skip
    flow = np.zeros(state.shape[0])
    touched = np.zeros(state.shape[0], dtype=np.bool_)
    for layer in range(moves_off.shape[0] - 2, -1, -1):
        for j in range(chance_off[layer], chance_off[layer + 1]):
            r = chance[j]
            if chosen[r]:
                node[ch_node[r]] += state[ch_state[r]] * prob[r]
        for j in range(moves_off[layer], moves_off[layer + 1]):
            m = moves[j]
            if dst[m] >= 0:
                flow[dst[m]] += node[mv_node[m]] * move_prob[m]
                touched[dst[m]] = True
        for j in range(moves_off[layer], moves_off[layer + 1]):
            d = dst[moves[j]]
            if d >= 0 and touched[d]:
                state[d] += flow[d]
                flow[d], touched[d] = 0.0, False


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
