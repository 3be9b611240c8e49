"""Exact values of solved Knucklebones boards, for the search to look up instead of estimate.

The boards built by `stb-pipeline build` (``knucklebones-2x2``, ``-2x3``, ``-3x2``, ``-3x3-d4``)
have every position's exact value in the ``states`` table (the shared file, or the variant's own
file for the boards stored on their own): one variant maximising the win
probability, its ``-score`` twin the expected final score difference. A search over one of
these boards reads both and returns them wherever it meets a position, so its answers are
exact. The variants are found by their rules (the ``stb.rules`` metadata of ``states``), so
custom builds with the same board and die serve too.

The full game (``knucklebones`` and ``knucklebones-score``, built on a GPU by ``build --device
cuda``) has 4.8 billion positions: it is not loaded but looked up, a row group at a time
(:class:`TableLookup`); a move's value is its successor's, so the best column for a die needs at
most ``columns`` lookups.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.errors import TableError
from pipeline.games.knucklebones.game import MAX_GRAPH_STATES, KnuckleRules
from pipeline.store import tables


@dataclass(frozen=True)
class KnownValues:
    """Exact (win, diff) of every state of one board and die, rows by state id."""

    values: np.ndarray
    """[states, 2]: P(win) under win-maximising play, E[difference] under score-maximising play."""
    variants: tuple[str, str]
    """The variants read: (wins, score)."""


def table_variants(data_dir: Path, rules: KnuckleRules) -> tuple[str, str] | None:
    """The built (wins, score) variants with the board and die of ``rules``; None if either is
    missing (no states table, or only one objective built)."""
    found = _variant_files(data_dir, rules)
    return None if found is None else (found[0][0], found[1][0])


def _variant_files(data_dir: Path, rules: KnuckleRules) -> list[tuple[str, Path]] | None:
    """(variant, file holding its states) for the wins and the score objective of ``rules``:
    the shared ``states.parquet`` or a variant's own file (the big boards live in their own)."""
    tables.settle(data_dir)  # a commit in progress or interrupted: finish it before reading
    by_variant: dict[str, tuple[dict, Path]] = {}
    for path in tables.table_files(data_dir, "states"):
        try:
            file_rules = tables.file_rules(path)
        except (pa.ArrowException, OSError, ValueError):
            raise TableError(f"{path} is not a readable table; move it away and rebuild") from None
        by_variant.update({v: (r, path) for v, r in file_rules.items()})
    found = []
    for objective in ("wins", "score"):
        want = {**rules.to_dict(), "objective": objective}
        names = sorted(v for v, (r, _) in by_variant.items() if r == want)
        if not names:
            return None
        found.append((names[0], by_variant[names[0]][1]))
    return found


def load_known(data_dir: Path, rules: KnuckleRules, n_states: int) -> KnownValues | None:
    """Both objectives' exact values for the board of ``rules``, or None when not built.

    Reads only the two variants' ``state_id`` and ``value`` columns (a filter pushed down to the
    Parquet row groups), once; TableError if a variant does not hold every state.
    """
    if n_states > MAX_GRAPH_STATES:
        return None  # never built (the full game): do not touch the tables at all
    found = _variant_files(data_dir, rules)
    if found is None:
        return None
    out = np.full((n_states, 2), np.nan)
    for k, (name, path) in enumerate(found):
        frame = (
            pl.scan_parquet(path)
            .filter(pl.col("variant") == name)
            .select("state_id", "value")
            .collect()
        )
        ids = frame["state_id"].to_numpy()
        if frame.height != n_states or ids.min() < 0 or ids.max() >= n_states:
            raise TableError(
                f"{path}: variant {name} holds {frame.height:,} states, expected {n_states:,}; "
                f"rebuild it with `stb-pipeline build --variant {name}`"
            )
        out[ids, k] = frame["value"].to_numpy()
    if np.isnan(out).any():
        raise TableError(f"{found[0][0]} or {found[1][0]} has states without a value")
    return KnownValues(out, (found[0][0], found[1][0]))


class TableLookup:
    """Point lookups of both objectives' values in the states tables of a board too big to load
    (the full game, built by ``build --device cuda``: one lean row per position, sorted by
    state id, in row groups whose ``state_id`` statistics say their id range).

    A lookup reads the row group holding the id from each of the two files (one each, about
    5 MB): the files' footers are read once, on opening.
    """

    def __init__(self, found: list[tuple[str, Path]]) -> None:
        import pyarrow.parquet as pq

        self.variants = (found[0][0], found[1][0])
        self.files = [pq.ParquetFile(path) for _, path in found]
        self.starts: list[np.ndarray] = []
        self.value_col: list[int] = []
        for f, (name, path) in zip(self.files, found, strict=True):
            names = f.schema_arrow.names
            sid, self_value = names.index("state_id"), names.index("value")
            meta = f.metadata
            starts = []
            for g in range(meta.num_row_groups):
                stats = meta.row_group(g).column(sid).statistics
                if stats is None or not stats.has_min_max:
                    raise TableError(f"{path}: row group {g} has no state_id statistics")
                starts.append(stats.min)
            self.starts.append(np.asarray(starts, dtype=np.int64))
            self.value_col.append(self_value)
            if meta.num_rows and not np.all(np.diff(self.starts[-1]) > 0):
                raise TableError(f"{path}: {name} is not sorted by state id; rebuild it")
        self._cache: dict[tuple[int, int], np.ndarray] = {}

    def values(self, ids: np.ndarray) -> np.ndarray:
        """[len(ids), 2]: (P(win), E[difference]) of each state id, from the tables."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((ids.shape[0], 2))
        for k in range(2):
            group = np.searchsorted(self.starts[k], ids, side="right") - 1
            for g in np.unique(group):
                col = self._group(k, int(g))
                at = ids[group == g] - self.starts[k][g]
                out[group == g, k] = col[at]
        return out

    def _group(self, k: int, g: int) -> np.ndarray:
        """The ``value`` column of row group ``g`` of file ``k`` (the last few are kept)."""
        key = (k, g)
        if key not in self._cache:
            if len(self._cache) >= 64:
                self._cache.pop(next(iter(self._cache)))
            table = self.files[k].read_row_group(g, columns=["value"])
            self._cache[key] = table.column(0).to_numpy()
        return self._cache[key]


def open_lookup(data_dir: Path, rules: KnuckleRules) -> TableLookup | None:
    """Point lookups in the built (wins, score) states tables of ``rules``' board, or None when
    either is not built. For the boards too big for :func:`load_known` (the full game)."""
    found = _variant_files(data_dir, rules)
    return None if found is None else TableLookup(found)
