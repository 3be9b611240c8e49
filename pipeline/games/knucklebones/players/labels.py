"""Labelled Knucklebones positions: where a player is measured against exact values, and what
an evaluator is fitted to.

A labelled position is a canonical position before the roll with its exact value and the exact
value of every choice, (die, column), in both objectives: the win chance (a draw counting 1/2)
and the expected final score difference. A choice is worth its successor's value seen from the
other side (``1 - win``, ``-diff``). Choices are numbered ``die_index * columns + j``, ``j`` the
column's place in the canonical (sorted) position; a choice that is no move (a full column, or a
column holding the same pair as the one before it, which is that column's move) is -1 / NaN.

Which positions are labelled, and how they are drawn, is
:mod:`pipeline.games.knucklebones.players.positions`'s. The values come from a ``lookup`` (state ids
to values): the exact solution of a board in memory, or a GPU's bounds. The Bellman equation holds
among a labelled position's own numbers (its value is the mean over dice of its best choice): the
artefacts' contract checks it (:mod:`pipeline.analysis.knucklebones_artefacts`); their file is
:mod:`pipeline.games.knucklebones.players.artefacts`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.games.knucklebones.game import Knucklebones

#: Each objective a board is solved for and the name of its value, in a labelled set, in an
#: answer (:mod:`pipeline.games.knucklebones.columns`) and in the search's
#: :class:`~pipeline.games.knucklebones.players.search.Eval`: the mover's win chance (a draw
#: counting 1/2), the expected final score difference.
FIELDS = {"wins": "win", "score": "diff"}

#: A lookup of exact values: state ids -> float64 values, one objective.
Lookup = Callable[[np.ndarray], np.ndarray]
#: One position in this many is held out: never an evaluator's training example, always where
#: players are measured (:func:`held_out`).
HELD_OUT_EVERY = 10


def held_out(state_id: np.ndarray) -> np.ndarray:
    """Whether each state id is held out: a fixed hash of the id (splitmix64's finaliser), so
    the split is the same on every machine and for every labelled set of a board."""
    with np.errstate(over="ignore"):
        z = np.asarray(state_id, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(HELD_OUT_EVERY)) == 0


@dataclass
class Labelled:
    """Labelled positions of one board (its columns, rows and die): arrays of equal length."""

    columns: int
    rows: int
    faces: int
    state_id: np.ndarray
    """int64 canonical state ids (each once)."""
    source: np.ndarray
    """str: ``play`` or ``uniform``."""
    ply: np.ndarray
    """int16: placements before the position in its game (-1 for ``uniform``)."""
    dice: np.ndarray
    """int16: dice on the table (both boards)."""
    next_id: np.ndarray
    """int64 [n, faces * columns]: each choice's successor id (-1: no such move)."""
    values: dict[str, np.ndarray] = field(default_factory=dict)
    """Per objective built (``win``, ``diff``): the position's value [n]."""
    choices: dict[str, np.ndarray] = field(default_factory=dict)
    """Per objective built: each choice's value [n, faces * columns] (NaN: no such move)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """How the set was made: seed, games, players, sample sizes, the values' tolerance."""

    def __len__(self) -> int:
        return int(self.state_id.shape[0])

    def subset(self, keep: np.ndarray) -> Labelled:
        """The positions where ``keep`` (a boolean mask or indices)."""
        return Labelled(
            self.columns, self.rows, self.faces, self.state_id[keep], self.source[keep],
            self.ply[keep], self.dice[keep], self.next_id[keep],
            {k: v[keep] for k, v in self.values.items()},
            {k: v[keep] for k, v in self.choices.items()}, dict(self.meta),
        )  # fmt: skip


# -- labels ----------------------------------------------------------------------------------


def label(
    game: Knucklebones,
    state_id: np.ndarray,
    source: np.ndarray,
    ply: np.ndarray,
    lookups: dict[str, Lookup],
    meta: dict[str, Any] | None = None,
) -> Labelled:
    """The labelled set of positions ``state_id`` (in play, each once) from ``lookups``: per
    objective (``wins``, ``score``) a function of state ids to exact values."""
    from pipeline.games.knucklebones.exact.cpu import pairs_of, successor_ids

    state_id = np.asarray(state_id, dtype=np.int64)
    pairs = pairs_of(game.r, state_id)
    dice = game.t.mover_size[pairs].sum(1) + game.t.opp_size[pairs].sum(1)
    nxt = successor_ids(game.r, state_id)
    out = Labelled(
        game.r.columns, game.r.rows, game.r.faces, state_id, np.asarray(source),
        np.asarray(ply, dtype=np.int16), dice.astype(np.int16), nxt, meta=dict(meta or {}),
    )  # fmt: skip
    legal = nxt >= 0
    for objective, lookup in lookups.items():
        name = FIELDS[objective]
        offset = 1.0 if objective == "wins" else 0.0
        out.values[name] = np.asarray(lookup(state_id), dtype=np.float64)
        succ = np.asarray(lookup(np.where(legal, nxt, 0).ravel()), dtype=np.float64)
        out.choices[name] = np.where(legal, offset - succ.reshape(nxt.shape), np.nan)
    return out
