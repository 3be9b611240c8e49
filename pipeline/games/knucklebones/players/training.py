"""Fitting the distilled Knucklebones evaluator (:mod:`~.players.evaluator`)
to exact values, in numpy alone: reproducible from a seed, on any machine.

The training examples are a labelled set's (:mod:`pipeline.games.knucklebones.players.labels`): each
labelled position with its exact values, and each of its choices' successors with theirs (a
choice's value is its successor's seen from the other side), every state once. So a set of
positions from play teaches the values of the positions play meets and of every position one
placement away: the ones a search compares.

The network: each facing pair's vector ``E[p]`` is made from the pair's dice by a small
perceptron shared by all pairs (``phi``: the counts of each face in each of the two columns,
their sizes and scores), so that pairs seen rarely borrow from the ones seen often; after
training the vectors are kept as a table (the evaluator's ``E``) and ``phi`` is dropped. The
loss is the cross-entropy of the win chance plus the squared error of the score difference
(scaled by ``diff_scale``), minimised by Adam with a cosine learning rate over shuffled
mini-batches. Every random number comes from one generator seeded by ``seed``, and the matrix
products run on one BLAS thread (the matrices are small: more threads only wait for each other,
and their count would change the last bits): the same labelled set, seed and settings give the
same weights on the same numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.games.knucklebones.game import Knucklebones
from pipeline.games.knucklebones.players.evaluator import (
    ARRAYS,
    Evaluator,
    gain_features,
    gain_table,
)
from pipeline.games.knucklebones.players.labels import Labelled, held_out

#: Scale of the score difference in the network's second output (points per unit).
DIFF_SCALE = 30.0


@dataclass(frozen=True)
class Settings:
    """How a model is fitted."""

    embed: int = 128
    """Width of the pair vectors and of the sum."""
    phi: int = 128
    """Hidden width of the pair perceptron."""
    hidden: tuple[int, int] = (64, 32)
    """Widths of the two hidden layers after the sum."""
    epochs: int = 8
    batch: int = 512
    rate: float = 2e-3
    """Adam's peak learning rate (cosine decay to zero)."""
    diff_weight: float = 0.5
    """Weight of the score difference's squared error beside the win's cross-entropy."""
    rank_weight: float = 1.0
    """Weight of the choices' error among themselves: at a labelled decision (position, die),
    the squared error of each choice's win chance less the mean of its siblings' (what a pick
    compares), beside the values' own loss; 0 leaves it out. At 1.0 the 3x3-d4 model at depth 3
    picked an optimal column in 96.2 % of held-out decisions, against 96.0 % at 0."""
    seed: int = 0


def examples(labelled: Labelled) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(state ids, win, diff) of every labelled position and every choice's successor, each
    state once (a successor's value is its choice's seen from the other side), less the
    held-out positions (:func:`pipeline.games.knucklebones.players.labels.held_out`)."""
    win_c, diff_c = labelled.choices["win"], labelled.choices["diff"]
    legal = labelled.next_id >= 0
    ids = np.concatenate([labelled.state_id, labelled.next_id[legal]])
    win = np.concatenate([labelled.values["win"], 1.0 - win_c[legal]])
    diff = np.concatenate([labelled.values["diff"], -diff_c[legal]])
    ids, first = np.unique(ids, return_index=True)
    keep = ~held_out(ids)
    return ids[keep], win[first][keep], diff[first][keep]


def sibling_choices(labelled: Labelled) -> np.ndarray:
    """[decisions, columns] successor ids of every labelled decision (position, die) with two
    or more moves and no held-out successor (-1 pads a column that is no move)."""
    f, c = labelled.faces, labelled.columns
    nxt = labelled.next_id.reshape(-1, c)
    legal = nxt >= 0
    held = np.where(legal, held_out(np.maximum(nxt, 0)), False)
    keep = (legal.sum(1) >= 2) & ~held.any(1)
    keep &= np.repeat(~held_out(labelled.state_id), f)
    return nxt[keep]


def pair_features(game: Knucklebones) -> np.ndarray:
    """[pairs, features] float32: each facing pair's dice, one-hot counts of every face in
    the mover's and the opponent's column, each column's size (one-hot) and score / 30."""
    t, r = game.t, game.r
    eye = np.eye(r.rows + 1, dtype=np.float32)
    parts: list[np.ndarray] = []
    for col in (t.pair_mover, t.pair_opp):
        counts = t.col_counts[col]
        parts += [eye[counts[:, v]] for v in range(r.faces)]
        parts.append(eye[t.col_size[col]])
        parts.append((t.col_score[col] / 30.0).astype(np.float32)[:, None])
    return np.concatenate(parts, axis=1)


class Network:
    """The trainable network: the pair perceptron, the count table and the head."""

    def __init__(self, game: Knucklebones, settings: Settings, rng: np.random.Generator):
        self.game = game
        self.features = pair_features(game)
        self.gain = gain_table(game.t)
        self.counts = game.r.slots + 1
        s = settings
        h1, h2 = s.hidden
        shapes = {
            "A1": (self.features.shape[1], s.phi), "a1": (s.phi,), "A2": (s.phi, s.embed),
            "a2": (s.embed,), "C": (self.counts**2, s.embed), "G": (2 * game.r.faces, s.embed),
            "W1": (s.embed, h1), "b1": (h1,),
            "W2": (h1, h2), "b2": (h2,), "W3": (h2, 2), "b3": (2,),
        }  # fmt: skip
        self.p: dict[str, np.ndarray] = {}
        for name, shape in shapes.items():
            if len(shape) == 1:
                self.p[name] = np.zeros(shape, np.float32)
            elif name in ("C", "G"):
                self.p[name] = rng.normal(0.0, 0.05, shape).astype(np.float32)
            else:  # He initialisation of a relu layer
                scale = np.sqrt(2.0 / shape[0])
                self.p[name] = (rng.normal(0.0, 1.0, shape) * scale).astype(np.float32)

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """The pair vectors E [pairs, embed] and the perceptron's hidden layer (for backprop)."""
        p = self.p
        hid = np.maximum(self.features @ p["A1"] + p["a1"], 0)
        return hid @ p["A2"] + p["a2"], hid

    def forward(self, pairs: np.ndarray, cnt: np.ndarray) -> tuple[np.ndarray, tuple]:
        """Outputs [batch, 2] (win logit, diff / scale) and what backward needs."""
        p = self.p
        E, hid = self.table()
        feats = gain_features(self.gain, self.game.t.swap, pairs).astype(np.float32)
        x = E[pairs].sum(1) + p["C"][cnt] + feats @ p["G"]
        a0 = np.maximum(x, 0)
        z1 = a0 @ p["W1"] + p["b1"]
        a1 = np.maximum(z1, 0)
        z2 = a1 @ p["W2"] + p["b2"]
        a2 = np.maximum(z2, 0)
        return a2 @ p["W3"] + p["b3"], (pairs, cnt, hid, feats, x, a0, z1, a1, z2, a2)

    def backward(self, gout: np.ndarray, cache: tuple) -> dict[str, np.ndarray]:
        """Gradients of every parameter from the outputs' gradient."""
        p = self.p
        pairs, cnt, hid, feats, x, a0, z1, a1, z2, a2 = cache
        g: dict[str, np.ndarray] = {"W3": a2.T @ gout, "b3": gout.sum(0)}
        d = (gout @ p["W3"].T) * (z2 > 0)
        g["W2"], g["b2"] = a1.T @ d, d.sum(0)
        d = (d @ p["W2"].T) * (z1 > 0)
        g["W1"], g["b1"] = a0.T @ d, d.sum(0)
        d = (d @ p["W1"].T) * (x > 0)
        g["C"] = _scatter(cnt, d, p["C"].shape[0])
        g["G"] = feats.T @ d
        gE = _scatter(pairs[:, 0], d, self.features.shape[0])
        for j in range(1, pairs.shape[1]):
            gE += _scatter(pairs[:, j], d, self.features.shape[0])
        g["A2"], g["a2"] = hid.T @ gE, gE.sum(0)
        dh = (gE @ p["A2"].T) * (hid > 0)
        g["A1"], g["a1"] = self.features.T @ dh, dh.sum(0)
        return g

    def evaluator(self, meta: dict) -> Evaluator:
        """The network as it stands, as an evaluator with the record ``meta``: the pair vectors
        as a table, the perceptron dropped."""
        E, _ = self.table()
        found = {"E": E, **{k: self.p[k] for k in ARRAYS if k != "E"}}
        # float32 values held as float64: the evaluator answers alike before and after saving
        arrays = {k: v.astype(np.float32).astype(np.float64) for k, v in found.items()}
        r = self.game.r
        return Evaluator(r.columns, r.rows, r.faces, arrays, DIFF_SCALE, meta)


def _rank_gradient(w: np.ndarray, target: np.ndarray, sib: np.ndarray, weight: float) -> np.ndarray:
    """The gradient, by each sibling's logit, of ``weight`` times the mean over decisions of
    the sum of squared errors of the siblings' win chances less their decision's mean."""
    legal = sib >= 0
    p = np.where(legal, w.reshape(sib.shape), 0.0)
    t = np.where(legal, target[np.maximum(sib, 0)], 0.0)
    count = legal.sum(1, keepdims=True)
    e = (p - p.sum(1, keepdims=True) / count) - (t - t.sum(1, keepdims=True) / count)
    grad = 2 * weight * np.where(legal, e, 0.0) * p * (1 - p) / sib.shape[0]
    return grad.ravel().astype(np.float32)


def _scatter(index: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    """sum of ``rows`` by ``index`` into ``size`` rows (np.add.at, by bincount per column)."""
    out = np.empty((size, rows.shape[1]), np.float32)
    for k in range(rows.shape[1]):
        out[:, k] = np.bincount(index, weights=rows[:, k], minlength=size)
    return out


class Adam:
    """Adam (Kingma and Ba) over a dict of float32 arrays."""

    def __init__(self, params: dict[str, np.ndarray]):
        self.b1, self.b2, self.t = 0.9, 0.999, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray], rate: float):
        self.t += 1
        c1, c2 = 1 - self.b1**self.t, 1 - self.b2**self.t
        for k, g in grads.items():
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * g * g
            step = rate * (self.m[k] / c1) / (np.sqrt(self.v[k] / c2) + 1e-8)
            params[k] -= step.astype(np.float32)


def fit(
    game: Knucklebones,
    labelled: Labelled,
    settings: Settings = Settings(),
    meta: dict | None = None,
    report: Callable[[int, float], None] | None = None,
) -> Evaluator:
    """An evaluator of ``game``'s board fitted to ``labelled``'s examples (:func:`examples`);
    ``report(epoch, mean absolute error of the win chance)`` after each epoch."""
    from pipeline.games.knucklebones.exact.cpu import pairs_of

    with one_thread():
        ids, win, diff = examples(labelled)
        fitter = Fitter(game, settings)
        siblings = sibling_choices(labelled) if settings.rank_weight > 0 else np.zeros((0, 1), int)
        # each sibling's row among the examples (every one is an example: a choice's successor)
        rows = np.where(siblings >= 0, np.searchsorted(ids, np.maximum(siblings, 0)), -1)
        fitter.fit(pairs_of(game.r, ids), win, diff, settings.epochs, rows, report)
        return fitter.net.evaluator(
            {**(meta or {}), "examples": len(ids), "settings": settings.__dict__ | {}}
        )


class Fitter:
    """A network and its optimiser, fitted once (:func:`fit`) or again and again to new
    examples, warm (:mod:`pipeline.games.knucklebones.players.fitted`): every random number
    from one generator seeded by ``settings.seed``. Call it under one BLAS thread
    (:func:`one_thread`) for weights that do not depend on the machine's thread count."""

    def __init__(self, game: Knucklebones, settings: Settings) -> None:
        self.game = game
        self.settings = settings
        self.rng = np.random.default_rng(settings.seed)
        self.net = Network(game, settings, self.rng)
        self.opt = Adam(self.net.p)

    def counts(self, pairs: np.ndarray) -> np.ndarray:
        """Each position's row of the count table (mover's dice, opponent's dice)."""
        t = self.game.t
        return t.mover_size[pairs].sum(1) * (self.game.r.slots + 1) + t.opp_size[pairs].sum(1)

    def fit(
        self,
        pairs: np.ndarray,
        win: np.ndarray,
        diff: np.ndarray,
        epochs: int,
        rows: np.ndarray | None = None,
        report: Callable[[int, float], None] | None = None,
    ) -> float:
        """Fit to the examples (rows of facing pairs, their win chance and score difference)
        for ``epochs`` passes, the learning rate decaying from the settings' to zero;
        ``rows``: [decisions, columns] example rows of sibling choices for the ranking loss
        (-1: no move); ``report(epoch, mean absolute error of the win chance)``. Returns the
        last epoch's error."""
        s, net, rng = self.settings, self.net, self.rng
        cnt = self.counts(pairs)
        win32 = win.astype(np.float32)
        diff32 = (diff / DIFF_SCALE).astype(np.float32)
        if rows is None:
            rows = np.zeros((0, 1), dtype=np.int64)
        n, bs = len(pairs), s.batch
        nd = min(len(rows), bs // 4)
        steps = max(1, epochs * (n // bs))
        step, err = 0, 0.0
        for epoch in range(epochs):
            order = rng.permutation(n)
            err = 0.0
            for b in range(n // bs):
                idx = order[b * bs : (b + 1) * bs]
                sib = rows[rng.integers(0, len(rows), nd)] if nd else rows[:0]
                both = np.concatenate([idx, np.maximum(sib, 0).ravel()])
                out, cache = net.forward(pairs[both], cnt[both])
                w = 1 / (1 + np.exp(-np.clip(out[:, 0], -40, 40)))
                gout = np.zeros_like(out)
                gout[:bs, 0] = (w[:bs] - win32[idx]) / bs
                gout[:bs, 1] = s.diff_weight * 2 * (out[:bs, 1] - diff32[idx]) / bs
                if nd:
                    gout[bs:, 0] = _rank_gradient(w[bs:], win32, sib, s.rank_weight)
                rate = s.rate * 0.5 * (1 + np.cos(np.pi * step / steps))
                self.opt.step(net.p, net.backward(gout, cache), rate)
                err += float(np.abs(w[:bs] - win32[idx]).mean())
                step += 1
            err /= max(1, n // bs)
            if report is not None:
                report(epoch, err)
        return err


def one_thread() -> Any:
    """A context in which numpy's matrix products run on one BLAS thread (see the module's
    docstring)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")
