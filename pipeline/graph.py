"""The array form of a stochastic game, the only thing the solvers see.

A game is a set of states. Before each roll the mover picks a *choice* (for dice games: how many
dice to roll) among those available in the state; the roll is drawn from the choice's distribution;
then the mover picks one legal *move* for that (state, roll), which leads to a successor state.
A (state, roll) pair is a *decision node*. A node with no legal move still has one row in the move
arrays: a forced "pass" (label -1) whose value is fixed by the game (a final score, or the other
player's turn).

Every move row's value is ``offset + scale * V[dst]`` (``dst = -1`` means no successor, so the
value is just ``offset``). That one formula covers the three cases the games need: moving on in a
one-player game (0 + 1 * V), ending with a score (score + 0), and handing the turn to an opponent
whose values are from their own point of view (1 - V for win probability, 0 - V for a score
difference).

Ordering invariants (the tests check them: ``tests/support/graphs.py``): chance rows are sorted
by (state, choice), nodes by (state, roll), moves by node; every node has at least one move row.
Integer arrays may be int32 (or smaller) where values fit, to keep large games in memory. When
states are indexed in rank order, every layer of the solve is a contiguous slice of each array
and solvers use views.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

NO_STATE = -1
PASS = -1


@dataclass(frozen=True)
class Graph:
    """A game in array form: states, chance rows, decision nodes and moves."""

    state_id: np.ndarray
    """int64 [S]: the game's canonical id of each state."""
    rank: np.ndarray
    """int64 [S]: for acyclic games every move leads to a state of lower rank."""
    terminal: np.ndarray
    """float64 [S]: the value of a terminal state, NaN for states where play goes on."""
    ch_state: np.ndarray
    """int [C]: state index of each chance row (one row per state, choice and roll)."""
    ch_choice: np.ndarray
    """int [C]: the choice made before the roll (number of dice for dice games)."""
    ch_count: np.ndarray
    """int64 [C]: numerator of the roll's probability."""
    ch_denom: np.ndarray
    """int64 [C]: denominator of the roll's probability."""
    ch_node: np.ndarray
    """int [C]: the decision node the roll leads to."""
    node_state: np.ndarray
    """int [N]: state index of each decision node."""
    node_roll: np.ndarray
    """int [N]: the roll of each decision node."""
    mv_node: np.ndarray
    """int [M]: the decision node of each move row."""
    mv_dst: np.ndarray
    """int [M]: successor state index, or -1 when the move ends the game."""
    mv_scale: np.ndarray
    """number [M]: factor applied to the successor's value."""
    mv_offset: np.ndarray
    """float64 [M]: value added to it."""
    mv_label: np.ndarray
    """int [M]: the game's encoding of the move (-1 for a forced pass). When several moves are
    equally good, solvers prefer the largest label: games encode their tie-break rule in it."""
    maximise: bool = True
    """Whether the mover maximises (True) or minimises (False) the value."""
    cyclic: bool = False
    """Whether moves can lead back to earlier states (no rank order: solve by value iteration)."""
    meta: dict = field(default_factory=dict)
    """Free-form notes the game wants recorded (e.g. whether edges were skipped)."""

    @property
    def n_states(self) -> int:
        """Number of states."""
        return int(self.state_id.shape[0])

    @property
    def ch_prob(self) -> np.ndarray:
        """float64 [C]: probability of each chance row."""
        return self.ch_count / self.ch_denom

    def move_starts(self) -> np.ndarray:
        """Index of the first move row of each node, plus a final end index."""
        counts = np.bincount(self.mv_node, minlength=self.node_state.shape[0])
        starts = np.zeros(counts.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])  # in place: no third array of the nodes' length
        return starts


def as_index(a: np.ndarray) -> np.ndarray:
    """``a`` as the int64 C array the compiled kernels take (no copy when it is one already).

    A game stores its index arrays in the narrowest type that fits; a kernel given int32 here
    and int64 there is compiled once for each (seconds on a first run), so the solvers cast
    them at the call, and each kernel has one signature.
    """
    return np.ascontiguousarray(a, dtype=np.int64)


def group_starts(keys: np.ndarray) -> np.ndarray:
    """Start positions of the runs of equal consecutive values in ``keys``."""
    if keys.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
