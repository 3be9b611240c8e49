"""The distilled Knucklebones evaluator: a small network fitted to exact values, read by the
search at its leaves.

A position is a multiset of facing column pairs, so the network sees it as one: each pair
``p`` has a learned vector ``E[p]`` (made from the pair's dice by a small network during
training, :mod:`pipeline.games.knucklebones.training`, and kept as a table), the position's
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

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numba
import numpy as np

#: Where the packaged weights live.
MODELS = Path(__file__).with_name("models")
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

    def packed(self, t: Any) -> tuple[np.ndarray, ...]:
        """The arrays as the compiled leaf takes them (float64, contiguous), the board's gain
        table and turn (``t``: its :class:`~pipeline.games.knucklebones.game.PairTables`) and
        the scales."""
        return (
            *(np.ascontiguousarray(self.arrays[k], dtype=np.float64) for k in ARRAYS),
            gain_table(t), np.ascontiguousarray(t.swap, dtype=np.int64),
            np.array([self.diff_scale, float(self.counts), GAIN_SCALE]),
        )  # fmt: skip

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

    def save(self, path: Path) -> None:
        """Write the weights and the record to ``path`` (.npz), atomically."""
        meta = {
            **self.meta, "columns": self.columns, "rows": self.rows, "faces": self.faces,
            "diff_scale": self.diff_scale,
        }  # fmt: skip
        blob: dict[str, Any] = {k: self.arrays[k].astype(np.float32) for k in ARRAYS}
        blob["meta"] = np.array(json.dumps(meta, sort_keys=True))
        # a temporary file beside it, then a rename: a reader never sees half a file
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, **blob)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


def board_name(game: Any) -> str:
    """A board's name in model file names: ``3x3-d6`` (of a game or its rules)."""
    r = getattr(game, "r", game)
    return f"{r.columns}x{r.rows}-d{r.faces}"


def load(path: Path) -> Evaluator:
    """An evaluator from its .npz file (ValueError when it is not one)."""
    with np.load(path, allow_pickle=False) as found:
        try:
            meta = json.loads(str(found["meta"]))
            arrays = {k: np.asarray(found[k], dtype=np.float64) for k in ARRAYS}
        except KeyError as exc:
            raise ValueError(f"{path} is not an evaluator's weights (no {exc})") from None
    return Evaluator(
        int(meta["columns"]), int(meta["rows"]), int(meta["faces"]), arrays,
        float(meta["diff_scale"]), meta,
    )  # fmt: skip


@lru_cache(maxsize=16)
def packaged(columns: int, rows: int, faces: int) -> Evaluator | None:
    """The packaged evaluator of a board, or None where there is none."""
    path = MODELS / f"{columns}x{rows}-d{faces}.npz"
    return load(path) if path.exists() else None


def gain_table(t: Any) -> np.ndarray:
    """[pairs, faces]: the mover's immediate change of the score difference when a die of
    each face goes in a column of each facing pair (:data:`NO_MOVE` where it is full)."""
    new = t.place
    gain = (t.mover_score[new] - t.mover_score[:, None]) + (t.opp_score[:, None] - t.opp_score[new])
    return np.ascontiguousarray(np.where(new >= 0, gain, NO_MOVE), dtype=np.float64)


def gain_features(gain: np.ndarray, swap: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """[positions, 2 * faces]: for each face, the best immediate gain of a die of that face
    for the mover, then for the opponent (0 where no column is open), / :data:`GAIN_SCALE`:
    what the columns offer together, a max over them that a sum of pair vectors cannot
    express."""
    mover = gain[pairs].max(axis=1)
    opponent = gain[swap[pairs]].max(axis=1)
    both = np.concatenate([mover, opponent], axis=1)
    return np.where(both > NO_MOVE / 2, both, 0.0) / GAIN_SCALE


def empty_net() -> tuple[np.ndarray, ...]:
    """Arrays of the compiled leaf's types holding no model (the search without one)."""
    two = np.zeros((0, 0))
    one = np.zeros(0)
    return (two, two, two, two, one, two, one, two, one, two, np.zeros(0, np.int64), np.zeros(3))


@numba.njit(cache=True)
def net_leaf(pairs, mover_size, opp_size, net):
    """(win, diff) of sorted ``pairs`` for the player to move, from a packed evaluator."""
    E, C, G, W1, b1, W2, b2, W3, b3, gain, swap, scale = net
    h = E.shape[1]
    faces = gain.shape[1]
    m, o = 0, 0
    for j in range(pairs.shape[0]):
        m += mover_size[pairs[j]]
        o += opp_size[pairs[j]]
    x = C[m * int(scale[1]) + o].copy()
    for j in range(pairs.shape[0]):
        for k in range(h):
            x[k] += E[pairs[j], k]
    for v in range(faces):
        best_m, best_o = NO_MOVE, NO_MOVE
        for j in range(pairs.shape[0]):
            best_m = max(best_m, gain[pairs[j], v])
            best_o = max(best_o, gain[swap[pairs[j]], v])
        fm = best_m / scale[2] if best_m > NO_MOVE / 2 else 0.0
        fo = best_o / scale[2] if best_o > NO_MOVE / 2 else 0.0
        for k in range(h):
            x[k] += fm * G[v, k] + fo * G[faces + v, k]
    for k in range(h):
        x[k] = max(x[k], 0.0)
    h1 = _dense_relu(x, W1, b1)
    h2 = _dense_relu(h1, W2, b2)
    logit = b3[0]
    d = b3[1]
    for k in range(h2.shape[0]):
        logit += h2[k] * W3[k, 0]
        d += h2[k] * W3[k, 1]
    return 1.0 / (1.0 + np.exp(-logit)), d * scale[0]


@numba.njit(cache=True, fastmath=True)
def _dense_relu(x, W, b):
    """relu(x W + b)."""
    out = b.copy()
    for i in range(x.shape[0]):
        xi = x[i]
        if xi != 0.0:
            for k in range(out.shape[0]):
                out[k] += xi * W[i, k]
    for k in range(out.shape[0]):
        out[k] = max(out[k], 0.0)
    return out
