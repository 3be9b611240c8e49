"""An opening book of a Knucklebones board: every position within the first ``plies`` placements
of a game, with its exact value in both objectives, kept in the package beside the evaluator
(``models/<board>-book.npz``).

A book is made from an exact solve (:func:`make`: the positions reachable from the empty boards
in at most ``plies`` placements, every die and every column, each once by its canonical id) and
read by the answer (:func:`packaged`, :meth:`Book.values`): a position whose successors for the
die are all in the book is answered exactly from it, without tables or search.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.games.knucklebones.evaluator import MODELS
from pipeline.games.knucklebones.game import Knucklebones
from pipeline.games.knucklebones.labels import Lookup


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

    def save(self, path: Path, compact: bool = False) -> None:
        """Write the book to ``path`` (.npz), atomically. ``compact``: the values as float32
        (within half a float32 ulp: 3e-8 for a win chance; the full game's tables store the
        same) and the sorted ids as their first and the gaps after it (uint32 where every gap
        fits): 8 bytes a position before compression instead of 24, so that the full game's
        900,000 positions within 7 placements fit a GPU call's 16 MiB file."""
        meta = {
            **self.meta, "columns": self.columns, "rows": self.rows, "faces": self.faces,
            "plies": self.plies, "compact": compact,
        }  # fmt: skip
        arrays: dict[str, Any] = {"win": self.win, "diff": self.diff}
        if compact:
            gaps = np.diff(self.state_id)
            small = gaps.size == 0 or int(gaps.max()) < 2**32
            arrays = {
                "state_id_first": self.state_id[:1],
                "state_id_gaps": gaps.astype(np.uint32 if small else np.int64),
                "win": self.win.astype(np.float32), "diff": self.diff.astype(np.float32),
            }  # fmt: skip
        else:
            arrays["state_id"] = self.state_id
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


def reachable(game: Knucklebones, plies: int) -> np.ndarray:
    """Sorted state ids of every position reachable from the start in at most ``plies``
    placements (any dice, any columns)."""
    from pipeline.games.knucklebones.exact import pairs_of, successor_ids

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


def load(path: Path) -> Book:
    """A book from its .npz file, compact or not (values as float64 either way)."""
    with np.load(path, allow_pickle=False) as found:
        meta = json.loads(str(found["meta"]))
        if "state_id" in found:
            ids = np.asarray(found["state_id"], dtype=np.int64)
        else:  # compact: the first id and the gaps after it
            gaps = np.asarray(found["state_id_gaps"], dtype=np.int64)
            ids = np.concatenate([found["state_id_first"], gaps]).astype(np.int64).cumsum()
        return Book(
            int(meta["columns"]), int(meta["rows"]), int(meta["faces"]), int(meta["plies"]),
            ids, np.asarray(found["win"], dtype=np.float64),
            np.asarray(found["diff"], dtype=np.float64), meta,
        )  # fmt: skip


@lru_cache(maxsize=16)
def packaged(columns: int, rows: int, faces: int) -> Book | None:
    """The packaged book of a board, or None where there is none."""
    path = MODELS / f"{columns}x{rows}-d{faces}-book.npz"
    return load(path) if path.exists() else None
