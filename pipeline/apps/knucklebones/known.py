"""Exact values of solved Knucklebones boards, for the search to look up instead of estimate.

The boards built by `stb-pipeline build` (``knucklebones-2x2``, ``-2x3``, ``-3x2``, ``-3x3-d4``)
have every position's exact value in the ``states`` table (the shared file, or the variant's own
file for the boards stored on their own): one variant maximising the win
probability, its ``-score`` twin the expected final score difference. A search over one of
these boards reads both and returns them wherever it meets a position, so its answers are
exact. The variants are found by their rules (the ``stb.rules`` metadata of ``states``), so
custom builds with the same board and die serve too.
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
