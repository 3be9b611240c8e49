"""The files that hold each table's rows, and what a reader must know of each one.

A data directory keeps a table in a shared file (``<table>.parquet``, many variants) and in the
files of the variants stored on their own (``variants/<variant>/<table>.parquet``); a dataset
written by `export dataset` keeps one file per table and variant (``<table>/<variant>.parquet``).
Every reader of a whole table (the DuckDB views of :mod:`pipeline.store.views`, polars and
pyarrow in :mod:`pipeline.store.readers`) starts from the same :class:`TableFile` list, so they
read the same rows under the same columns.

Only footers are read here (and one column of one row group of a variant's own file), so
listing the files of tables of billions of rows costs milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import TableError
from pipeline.store import manifest, schema
from pipeline.store.footers import Footer, footer
from pipeline.store.listing import OWN_DIR, TABLE_NAME, all_table_files  # noqa: F401  (OWN_DIR: this module's interface)

#: The files of a dataset written by `export dataset` beside its tables: the index (tables,
#: columns, files, hashes; its format, :data:`DATASET_FORMAT`, bumped when the layout or the
#: index changes shape), the dataset card, the sha256 of every other file.
DATASET_INDEX = "dataset.json"
DATASET_FORMAT = 1
DATASET_CARD = "README.md"
DATASET_SUMS = "SHA256SUMS"


@dataclass(frozen=True)
class TableFile:
    """One file of a table, as the readers see it."""

    table: str
    relative: str
    """Its path below the directory, with ``/`` (``variants/four-player/policy.parquet``)."""
    variant: str | None
    """The one variant whose rows it holds (None: a shared file of many variants)."""
    columns: tuple[str, ...]
    tiles: int | None = None
    """Set for a file that leaves its tile columns to the reader (a box of 13 tiles or more
    built without a graph): its number of tiles (see :data:`pipeline.store.schema.TILE_SOURCES`)."""
    lean: bool = False
    """Whether it holds only some of its table's columns (the full Knucklebones game's states)."""


def data_files(data_dir: Path) -> dict[str, list[TableFile]]:
    """Every table of a data directory and its files (the one listing,
    :func:`~pipeline.store.layout.all_table_files`: the shared file first, then the variants'
    own files by variant name). TableError naming a file that is not one of our tables."""
    data_dir = Path(data_dir)
    return {
        table: [
            _inspect(data_dir, path, table, path.parent.name if path.parent != data_dir else None)
            for path in paths
        ]
        for table, paths in all_table_files(data_dir).items()
    }


def files_of(root: Path) -> dict[str, list[TableFile]]:
    """Every table below ``root`` and its files: an exported dataset's, else a data
    directory's."""
    return export_files(root) if is_dataset(root) else data_files(root)


def is_dataset(root: Path) -> bool:
    """Whether ``root`` holds a dataset written by `export dataset` (its index file)."""
    return (Path(root) / DATASET_INDEX).is_file()


def export_files(root: Path) -> dict[str, list[TableFile]]:
    """Every table of an exported dataset (``<table>/<variant>.parquet``) and its files, by
    variant name."""
    root = Path(root)
    found: dict[str, list[TableFile]] = {}
    for path in sorted(root.glob("*/*.parquet")):
        if TABLE_NAME.fullmatch(path.parent.name):
            table = path.parent.name
            found.setdefault(table, []).append(_inspect(root, path, table, path.stem))
    return dict(sorted(found.items()))


def _inspect(root: Path, path: Path, table: str, variant: str | None) -> TableFile:
    """What the readers need of one file of ``table`` (from its footer); TableError when it is
    not a readable table of ours."""
    found = footer(path)
    if "variant" not in found.columns:
        raise manifest.not_ours(path)
    tiles = _tile_count(found, variant) if variant is not None else None
    lean = found.declared is not None
    return TableFile(table, path.relative_to(root).as_posix(), variant, found.columns, tiles, lean)


def _tile_count(found: Footer, variant: str) -> int | None:
    """The number of tiles of a file that leaves its tile columns to the reader, else None.

    Such a file has a ``tiles`` column and nothing in it (the streamed build of big boxes writes
    it null; every other build writes the state's text, Knucklebones boards included). Its tile
    count is the one its rules record, else the bits of its largest state id (the full box)."""
    if "tiles" not in found.columns or "state_id" not in found.columns or found.rows == 0:
        return None
    stats = found.stats("tiles")[0]
    if stats is not None and stats.nulls is not None:
        if stats.nulls < found.group_rows(0):
            return None
    elif not found.empty_in_first_group("tiles"):  # no statistics: the first rows say
        return None
    rules = found.rules.get(variant, {})
    if isinstance(rules.get("tiles"), int):
        return int(rules["tiles"])
    largest = max((int(st.max) for st in found.stats("state_id") if st and st.max is not None),
                  default=0)  # fmt: skip
    return max(largest.bit_length(), 1)


def rules_of(root: Path, files: list[TableFile]) -> dict[str, Any]:
    """The rule sets the files record (``stb.rules``), by variant."""
    out: dict[str, Any] = {}
    for f in files:
        out.update(footer(Path(root) / f.relative).rules)
    return dict(sorted(out.items()))


def columns_of(table: str, files: list[TableFile]) -> list[str]:
    """The columns a reader of ``table`` sees, in order: the table's one schema
    (:data:`pipeline.store.schema.COLUMNS`), whether or not a file holds each column, then the
    columns of its own that a game adds, in the order the files first hold them."""
    fixed = [name for name, _ in schema.COLUMNS.get(table, ())]
    extra: list[str] = []
    for f in files:
        extra += [c for c in f.columns if c not in fixed and c not in extra]
    return fixed + extra


@dataclass(frozen=True)
class LeanSample:
    """The row groups of one lean file (the full Knucklebones game's states) that a sampled
    view reads: their id ranges, evenly spaced from the first to the last."""

    path: Path
    ranges: tuple[tuple[int, int], ...]
    groups: int
    rows: int
    total_rows: int

    def describe(self, root: Path | None = None) -> str:
        """One line for people: which file (relative to ``root``), how much of it."""
        path = self.path.relative_to(root) if root is not None else self.path
        return (
            f"{path}: {len(self.ranges):,} of {self.groups:,} row groups sampled "
            f"({self.rows:,} of {self.total_rows:,} rows, evenly spaced by state id)"
        )


def lean_sample(path: Path, groups: int) -> LeanSample | None:
    """``groups`` row groups of a lean file, evenly spaced (the first and the last among them);
    None for a file with every column of its table (read whole)."""
    import numpy as np

    found = footer(path)
    if found.declared is None:
        return None
    n = found.groups
    spaced = np.linspace(0, n - 1, min(groups, n)).round() if n else np.empty(0)
    chosen = sorted({int(g) for g in spaced})
    ids = found.stats("state_id")
    ranges = []
    for g in chosen:
        stats = ids[g] if ids else None
        if stats is None or stats.min is None:
            raise TableError(f"{path}: row group {g} has no state_id statistics; rebuild it")
        ranges.append((int(stats.min), int(stats.max)))
    rows = sum(found.group_rows(g) for g in chosen)
    return LeanSample(Path(path), tuple(ranges), n, rows, found.rows)
