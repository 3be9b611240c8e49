"""A table of a data directory as a polars LazyFrame or a pyarrow dataset, for downstream code.

Both read the same files as the DuckDB views (:mod:`pipeline.store.sources`), under the same
columns in the same order: the table's one schema, null where no file holds a column, then the
columns a game adds. :func:`scan` also fills in what a big box's files leave to the reader (tile
lists and texts from its bitmasks, the policy's next state, ``stuck`` and ``kind``, an edge's
``kind``), with the polars twins of the views' expressions
(:func:`pipeline.store.schema.tile_polars`), so it gives the views' rows. A pyarrow dataset reads
files and cannot compute a column: :func:`dataset` gives those columns as the files store them
(null; the ``*_mask`` columns and state ids say the same).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import TablesMissingError
from pipeline.store import schema, sources
from pipeline.store.footers import footer
from pipeline.store.layout import settle

if TYPE_CHECKING:
    import polars as pl
    import pyarrow.dataset as ds


def files_for(data_dir: Path, table: str, variant: str | None = None) -> list[sources.TableFile]:
    """The files a reader of ``table`` (only ``variant``'s rows, when given) reads: every file
    of the table, or the variant's own file, else the shared file when it holds the variant.
    ``data_dir`` may be a folder of `export dataset` too. TablesMissingError when there are
    none."""
    settle(data_dir)  # a commit cut short is finished first
    found = sources.files_of(Path(data_dir))  # a data directory, or an exported dataset
    if table not in found:
        tables = ", ".join(found) or "none"
        raise TablesMissingError(
            f"{data_dir} has no {table} table (tables there: {tables}): run "
            f"`stb-pipeline build --variant {variant or 'all'}` first"
        )
    files = found[table]
    if variant is not None:
        own = [f for f in files if f.variant == variant]
        files = own or [f for f in files if f.variant is None and _holds(data_dir, f, variant)]
    if not files:
        raise TablesMissingError(
            f"{data_dir} has no {table} rows of variant {variant!r}: run `stb-pipeline build "
            f"--variant {variant}` (or build with the same custom rule options) first"
        )
    return files


def _holds(data_dir: Path, f: sources.TableFile, variant: str) -> bool:
    """Whether a shared file may hold rows of ``variant`` (its row groups' statistics on the
    ``variant`` column say so; a file without them may)."""
    for stats in footer(Path(data_dir) / f.relative).stats("variant"):
        if stats is None or stats.min is None or stats.min <= variant <= stats.max:
            return True
    return False


def scan(data_dir: Path, table: str, variant: str | None = None) -> pl.LazyFrame:
    """``table`` (only ``variant``'s rows when given) as a polars LazyFrame: the views' rows
    and columns. Filters and column choices are pushed down to the Parquet files."""
    import polars as pl

    files = files_for(data_dir, table, variant)
    columns = sources.columns_of(table, files)
    fixed = dict(schema.COLUMNS.get(table, ()))
    frames = []
    for f in files:
        frame = pl.scan_parquet(Path(data_dir) / f.relative)
        wanted = f.variant if f.variant is not None else variant
        if wanted is not None:
            frame = frame.filter(pl.col("variant") == wanted)
        if f.tiles:
            frame = frame.with_columns(schema.tile_polars(table, list(f.columns), f.tiles))
        frame = frame.with_columns(
            pl.lit(None, schema.polars_type(table, c)).alias(c)
            for c in columns
            if c in fixed and c not in f.columns
        )
        frames.append(frame)
    whole = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    return whole.select(columns)


def dataset(data_dir: Path, table: str, variant: str | None = None) -> ds.Dataset:
    """``table`` (only ``variant``'s rows when given) as a pyarrow dataset over its files, with
    the views' columns in their order and types; a big box's tile lists and texts, its
    policy's next state, ``stuck`` and ``kind`` as stored (null), since a dataset cannot
    compute them (:func:`scan` does)."""
    import pyarrow.dataset as ds

    files = files_for(data_dir, table, variant)
    paths = [str(Path(data_dir) / f.relative) for f in files]
    seen = [footer(p).schema.remove_metadata() for p in paths]
    whole = ds.dataset(paths, schema=arrow_schema(table, files, seen), format="parquet")
    return whole if variant is None else whole.filter(ds.field("variant") == variant)


def arrow_schema(table: str, files: list[sources.TableFile], seen: list[Any]) -> Any:
    """The Arrow schema of ``table`` over ``files``: the one schema's types, then the columns a
    game adds, typed as the files (``seen``: their schemas) type them."""
    import pyarrow as pa

    fixed = dict(schema.arrow_fields(table)) if table in schema.COLUMNS else {}
    known = pa.unify_schemas(seen, promote_options="permissive")
    return pa.schema(
        [
            pa.field(c, fixed[c]) if c in fixed else known.field(c)
            for c in sources.columns_of(table, files)
        ]
    )
