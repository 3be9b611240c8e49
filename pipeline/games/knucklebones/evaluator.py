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
ARRAYS = ("E", "C", "W1", "b1", "W2", "b2", "W3", "b3")


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

    def packed(self) -> tuple[np.ndarray, ...]:
        """The arrays as the compiled leaf takes them (float64, contiguous) and the scale."""
        return _pack(self)

    def values(
        self, pairs: np.ndarray, mover_size: np.ndarray, opp_size: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(win, diff) of each row of facing-pair indices (any order), in numpy."""
        a = self.arrays
        pairs = np.asarray(pairs, dtype=np.int64)
        cnt = mover_size[pairs].sum(1) * self.counts + opp_size[pairs].sum(1)
        x = np.maximum(a["E"][pairs].sum(1) + a["C"][cnt], 0)
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


def _pack(ev: Evaluator) -> tuple[np.ndarray, ...]:
    return (
        *(np.ascontiguousarray(ev.arrays[k], dtype=np.float64) for k in ARRAYS),
        np.array([ev.diff_scale, float(ev.counts)]),
    )


def empty_net() -> tuple[np.ndarray, ...]:
    """Arrays of the compiled leaf's types holding no model (the search without one)."""
    two = np.zeros((0, 0))
    one = np.zeros(0)
    return (two, two, two, one, two, one, two, one, np.zeros(2))


@numba.njit(cache=True)
def net_leaf(pairs, mover_size, opp_size, net):
    """(win, diff) of sorted ``pairs`` for the player to move, from a packed evaluator."""
    E, C, W1, b1, W2, b2, W3, b3, scale = net
    h = E.shape[1]
    m, o = 0, 0
    for j in range(pairs.shape[0]):
        m += mover_size[pairs[j]]
        o += opp_size[pairs[j]]
    x = C[m * int(scale[1]) + o].copy()
    for j in range(pairs.shape[0]):
        for k in range(h):
            x[k] += E[pairs[j], k]
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
