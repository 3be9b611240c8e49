"""An opening book of a Knucklebones board: every position within the first ``plies`` placements
of a game, with its exact value in both objectives, kept in the package beside the evaluator
(``models/<board>-book.npz``).

A book is made from an exact solve (:func:`make`: the positions reachable from the empty boards
in at most ``plies`` placements, every die and every column, each once by its canonical id) and
read by the answer (:func:`packaged`, :meth:`Book.values`): a position whose successors for the
die are all in the book is answered exactly from it, without tables or search.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.games.knucklebones.game import Knucklebones
from pipeline.games.knucklebones.players.labels import Lookup


@dataclass
class Book:
    """Exact values of the positions within ``plies`` placements of the start."""

    columns: int
    rows: int
    faces: int
    plies: int
    state_id: np.ndarray
    """Sorted int64 state ids."""
    win: np.ndarray
    diff: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.state_id.shape[0])

    def values(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(win, diff) of every id, or None unless every one is in the book."""
        ids = np.asarray(ids, dtype=np.int64)
        at = np.searchsorted(self.state_id, ids)
        inside = at < len(self)
        if not inside.all() or not (self.state_id[at] == ids).all():
            return None
        return self.win[at].astype(np.float64), self.diff[at].astype(np.float64)


def reachable(game: Knucklebones, plies: int) -> np.ndarray:
    """Sorted state ids of every position reachable from the start in at most ``plies``
    placements (any dice, any columns)."""
    from pipeline.games.knucklebones.exact.cpu import pairs_of, successor_ids

    seen = level = np.array([game.start_state()], dtype=np.int64)
    for _ in range(plies):
        live = level[~game.terminal_mask(pairs_of(game.r, level))]
        nxt = successor_ids(game.r, live)
        level = np.setdiff1d(np.unique(nxt[nxt >= 0]), seen)
        seen = np.union1d(seen, level)
    return seen


def make(game: Knucklebones, lookups: dict[str, Lookup], plies: int, meta: dict) -> Book:
    """The book of ``game``'s board to ``plies`` placements, values from ``lookups`` (both
    objectives: ``wins`` and ``score``)."""
    ids = reachable(game, plies)
    r = game.r
    return Book(
        r.columns, r.rows, r.faces, plies, ids,
        np.asarray(lookups["wins"](ids), dtype=np.float64),
        np.asarray(lookups["score"](ids), dtype=np.float64), dict(meta),
    )  # fmt: skip
