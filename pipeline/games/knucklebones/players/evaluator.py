"""The distilled Knucklebones evaluator: a small network fitted to exact values, read by the
search at its leaves.

A position is a multiset of facing column pairs, so the network sees it as one: each pair
``p`` has a learned vector ``E[p]`` (made from the pair's dice by a small network during
training, :mod:`pipeline.games.knucklebones.players.training`, and kept as a table), the position's
vector is the sum over its columns plus a vector for its dice counts ``C[mover dice, opponent
dice]``, and a small perceptron turns it into the win chance (a logistic of its first output)
and the expected score difference (its second, times ``diff_scale``):

    x = relu(sum_j E[p_j] + C[m, o]);  h1 = relu(x W1 + b1);  h2 = relu(h1 W2 + b2)
    (logit, d) = h2 W3 + b3;  win = 1 / (1 + exp(-logit)),  diff = d * diff_scale

About ten thousand multiply-adds a position: microseconds in compiled code, so the search can
call it at every leaf. Inference is numpy (:meth:`Evaluator.values`) or numba
(:func:`net_leaf`, the search's leaf), from the same arrays.

The weights of each board live in ``models/`` beside this module (``<columns>x<rows>-d<faces>
.npz``, at most 2 MB), with what they were fitted to and how they played against exact values
on held-out positions (``meta``): the answer trusts a model as a board's default player only
where that record says it beat the search there (:attr:`Evaluator.trusted`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numba
import numpy as np

from pipeline.games.knucklebones import rules
from pipeline.solve.compiled import OPTIONS, kernel

#: The arrays of a model, in the order the compiled leaf takes them.
ARRAYS = ("E", "C", "G", "W1", "b1", "W2", "b2", "W3", "b3")
#: Points per unit of the gain features.
GAIN_SCALE = 10.0
#: A column that is full gains nothing and is no move: below any gain.
NO_MOVE = -1e9


@dataclass
class Evaluator:
    """A fitted evaluator of one board (columns, rows, faces): arrays :data:`ARRAYS`."""

    columns: int
    rows: int
    faces: int
    arrays: dict[str, np.ndarray]
    diff_scale: float
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def board(self) -> str:
        """The board's name in file names: ``3x3-d6``."""
        return f"{self.columns}x{self.rows}-d{self.faces}"

    @property
    def counts(self) -> int:
        """Dice counts a board can hold, 0..slots: the side of the count table."""
        return self.columns * self.rows + 1

    @property
    def trusted(self) -> bool:
        """Whether the record says this model beat the search on held-out exact positions of
        its board (the answer's default player only then)."""
        return bool(self.meta.get("beats_search", False))

    def packed(self, t: Any) -> Net:
        """The network as the compiled leaf (:func:`net_leaf`) reads it: the arrays (float64,
        contiguous), the board's gain table and turn (``t``: its
        :class:`~pipeline.games.knucklebones.game.PairTables`), the scales, and room for the
        layers' values (each packing its own: one search at a time reads it)."""
        arrays = [np.ascontiguousarray(self.arrays[k], dtype=np.float64) for k in ARRAYS]
        width = max(a.shape[-1] for a in arrays)
        return Net._make([
            *arrays, gain_table(t), np.ascontiguousarray(t.swap, dtype=np.int64),
            np.array([self.diff_scale, float(self.counts), GAIN_SCALE]), np.zeros((3, width)),
        ])  # fmt: skip

    def values(self, t: Any, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(win, diff) of each row of facing-pair indices (any order) of the board whose
        :class:`~pipeline.games.knucklebones.game.PairTables` is ``t``, in numpy."""
        a = self.arrays
        pairs = np.asarray(pairs, dtype=np.int64)
        cnt = t.mover_size[pairs].sum(1) * self.counts + t.opp_size[pairs].sum(1)
        feats = gain_features(gain_table(t), t.swap, pairs)
        x = np.maximum(a["E"][pairs].sum(1) + a["C"][cnt] + feats @ a["G"], 0)
        h = np.maximum(x @ a["W1"] + a["b1"], 0)
        h = np.maximum(h @ a["W2"] + a["b2"], 0)
        out = h @ a["W3"] + a["b3"]
        return 1 / (1 + np.exp(-out[:, 0].astype(np.float64))), out[:, 1] * self.diff_scale


def gain_table(t: Any) -> np.ndarray:
    """[pairs, faces]: the mover's immediate change of the score difference when a die of
    each face goes in a column of each facing pair (:func:`rules.gain`; :data:`NO_MOVE` where
    it is full)."""
    gain = np.empty(t.moved.shape, dtype=np.int64)
    rules.gains(
        np.ascontiguousarray(t.moved, dtype=np.int64),
        np.ascontiguousarray(t.mover_score, dtype=np.int64),
        np.ascontiguousarray(t.opp_score, dtype=np.int64), gain,
    )  # fmt: skip
    return np.where(gain == rules.NO_GAIN, NO_MOVE, gain).astype(np.float64)


def gain_features(gain: np.ndarray, swap: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """[positions, 2 * faces]: for each face, the best immediate gain of a die of that face
    for the mover, then for the opponent (0 where no column is open), / :data:`GAIN_SCALE`:
    what the columns offer together, a max over them that a sum of pair vectors cannot
    express."""
    mover = gain[pairs].max(axis=1)
    opponent = gain[swap[pairs]].max(axis=1)
    both = np.concatenate([mover, opponent], axis=1)
    return np.where(both > NO_MOVE / 2, both, 0.0) / GAIN_SCALE


class Net(NamedTuple):
    """A packed evaluator (:meth:`Evaluator.packed`): what :func:`net_leaf` reads. The search
    passes it through without looking inside, so the network's shape can change here alone."""

    E: np.ndarray
    C: np.ndarray
    G: np.ndarray
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray
    W3: np.ndarray
    b3: np.ndarray
    gain: np.ndarray
    swap: np.ndarray
    scale: np.ndarray
    """diff_scale, the count table's side, the gains' scale."""
    work: np.ndarray
    """[3, width]: the layers' values of one leaf."""


def empty_net() -> Net:
    """A packed evaluator of the leaf's types holding no model (the search without one)."""
    two = np.zeros((0, 0))
    one = np.zeros(0)
    return Net(two, two, two, two, one, two, one, two, one, two, np.zeros(0, np.int64),
               np.zeros(3), np.zeros((3, 0)))  # fmt: skip


@kernel
def net_leaf(pairs, mover_size, opp_size, net):
    """(win, diff) of sorted ``pairs`` for the player to move, from a packed evaluator."""
    h = net.E.shape[1]
    faces = net.gain.shape[1]
    c = pairs.shape[0]
    m, o = rules.dice(pairs, c, mover_size, opp_size)
    x = net.work[0]
    row = m * int(net.scale[1]) + o
    for k in range(h):
        x[k] = net.C[row, k]
    for j in range(c):
        for k in range(h):
            x[k] += net.E[pairs[j], k]
    for v in range(faces):
        best_m, best_o = NO_MOVE, NO_MOVE
        for j in range(c):
            best_m = max(best_m, net.gain[pairs[j], v])
            best_o = max(best_o, net.gain[net.swap[pairs[j]], v])
        fm = best_m / net.scale[2] if best_m > NO_MOVE / 2 else 0.0
        fo = best_o / net.scale[2] if best_o > NO_MOVE / 2 else 0.0
        for k in range(h):
            x[k] += fm * net.G[v, k] + fo * net.G[faces + v, k]
    for k in range(h):
        x[k] = max(x[k], 0.0)
    n1, n2 = net.b1.shape[0], net.b2.shape[0]
    _dense_relu(x, h, net.W1, net.b1, net.work[1])
    _dense_relu(net.work[1], n1, net.W2, net.b2, net.work[2])
    logit = net.b3[0]
    d = net.b3[1]
    for k in range(n2):
        logit += net.work[2, k] * net.W3[k, 0]
        d += net.work[2, k] * net.W3[k, 1]
    return 1.0 / (1.0 + np.exp(-logit)), d * net.scale[0]


@numba.njit(**OPTIONS, fastmath=True)
def _dense_relu(x, n, W, b, out):
    """out[:len(b)] = relu(x[:n] W + b)."""
    for k in range(b.shape[0]):
        out[k] = b[k]
    for i in range(n):
        xi = x[i]
        if xi != 0.0:
            for k in range(b.shape[0]):
                out[k] += xi * W[i, k]
    for k in range(b.shape[0]):
        out[k] = max(out[k], 0.0)
