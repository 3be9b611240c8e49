"""Writing query results as CSV or Parquet files, atomically (through
:mod:`pipeline.store.tables`)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.errors import PipelineError, UsageError
from pipeline.store.files import why, write_bytes_atomic

if TYPE_CHECKING:  # a frame comes from polars; an Arrow table where polars is not installed
    import polars as pl
    import pyarrow as pa

FORMATS = ("table", "csv", "parquet")


def flatten_lists(frame: pl.DataFrame) -> pl.DataFrame:
    """List columns (moves, tiles) as text such as ``[3, 6]``, so that CSV can hold them."""
    import polars as pl

    lists = [name for name, dtype in frame.schema.items() if isinstance(dtype, pl.List)]
    return frame.with_columns(
        ("[" + pl.col(name).cast(pl.List(pl.String)).list.join(", ") + "]").alias(name)
        for name in lists
    )


def to_csv(frame: pl.DataFrame) -> str:
    """The frame as CSV text (list columns flattened to text, full float precision)."""
    return flatten_lists(frame).write_csv()


def to_parquet(frame: pl.DataFrame) -> bytes:
    """The frame as Parquet bytes."""
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


def arrow_to_csv(table: pa.Table) -> str:
    """An Arrow table as CSV text, list columns as text such as ``[3, 6]`` (a query's result
    where polars is not installed, as on a GPU machine)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    for i, field in enumerate(table.schema):
        if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
            text = [
                None if v is None else "[" + ", ".join(map(str, v)) + "]"
                for v in table.column(i).to_pylist()
            ]
            table = table.set_column(i, field.name, pa.array(text, pa.string()))
    buffer = io.BytesIO()
    pacsv.write_csv(table, buffer, pacsv.WriteOptions(quoting_style="needed"))
    return buffer.getvalue().decode()


def export_arrow(table: pa.Table, fmt: str, path: Path) -> None:
    """:func:`export` of an Arrow table (where polars is not installed)."""
    import pyarrow.parquet as pq

    if fmt not in FORMATS:
        raise UsageError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if fmt == "parquet":
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        data = buffer.getvalue()
    else:
        data = arrow_to_csv(table).encode()
    make_dir(Path(path).parent)
    write_bytes_atomic(path, data)


def export(frame: pl.DataFrame, fmt: str, path: Path) -> None:
    """Write ``frame`` to ``path`` as ``csv`` or ``parquet`` (``table`` writes CSV too)."""
    if fmt not in FORMATS:
        raise UsageError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    data = to_parquet(frame) if fmt == "parquet" else to_csv(frame).encode()
    make_dir(Path(path).parent)
    write_bytes_atomic(path, data)


def make_dir(directory: Path) -> None:
    """Create an output directory (and its parents); PipelineError when that is impossible."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PipelineError(f"cannot write to {directory}: {why(directory, exc)}") from None


def check_output(path: Path, data_dir: Path | None, force: bool) -> None:
    """Refuse an output file that would land in the data directory or replace a file unasked.

    A result written among the tables would be read as a table (or replace one); an existing
    file is replaced only with ``force``. Devices and pipes (``/dev/stdout``) are written to.
    UsageError (exit 2) otherwise.
    """
    path = Path(path)
    if data_dir is not None and inside(path, Path(data_dir)):
        raise UsageError(
            f"{path} is inside the data directory {data_dir}, which holds only the tables: "
            "write the result elsewhere"
        )
    if path.is_dir():
        raise UsageError(f"{path} is a directory: give a file name")
    if path.is_file() and not force:  # a link to a regular file counts; /dev/stdout does not
        raise UsageError(f"{path} exists: add --force to replace it")


#: Names at the top of a data directory that belong to it: the catalog, the manifest and the
#: folder of the variants' own files (besides any ``*.parquet``, read as a table, and any name
#: starting with a dot: the lock, the journal, temporary files).
DATA_DIR_NAMES = ("stb.duckdb", "manifest.json", "variants")


def among_tables(path: Path, data_dir: Path) -> str | None:
    """The name at the top of ``data_dir`` that writing ``path`` would take or create and that
    the data directory's readers own (``x.parquet``, even as a folder, is read as a table and
    fails every reader; ``stb.duckdb`` is the catalog's place); None when ``path`` is outside
    the data directory or in a folder of its own there (``data/report``)."""
    try:
        below = path.resolve().relative_to(Path(data_dir).resolve()).parts
    except (ValueError, OSError, RuntimeError):
        return None
    if not below:
        return "."
    first = below[0]
    if first.endswith(".parquet") or first.startswith(".") or first in DATA_DIR_NAMES:
        return first
    return None


def refuse_among_tables(path: Path, data_dir: Path, option: str) -> None:
    """UsageError when writing ``path`` (given as ``option``) would put a file or folder where
    the data directory's own files go (see :func:`among_tables`)."""
    name = among_tables(path, data_dir)
    if name is not None:
        where = "the data directory itself" if name == "." else f"{name!r} in it"
        raise UsageError(
            f"{option} {path} would write {where}, where {data_dir} keeps its tables: give a "
            f"folder of its own (e.g. {Path(data_dir) / 'out'}) or a place elsewhere"
        )


def inside(path: Path, directory: Path) -> bool:
    """Whether ``path`` is ``directory`` or lies under it (links followed)."""
    try:
        return path.resolve().is_relative_to(directory.resolve())
    except (OSError, RuntimeError):  # a link loop: not a place we would write into anyway
        return False
