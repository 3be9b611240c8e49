"""Writing query results as CSV or Parquet files, atomically (through
:mod:`pipeline.store.tables`)."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from pipeline.errors import PipelineError, UsageError
from pipeline.store.files import why, write_file_atomic
from pipeline.store.layout import LOCK_NAME

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


def export(rows: pl.DataFrame | pa.Table, fmt: str, path: Path) -> None:
    """Write ``rows`` (a polars frame, or an Arrow table where polars is not installed) to
    ``path`` as ``csv`` or ``parquet`` (``table`` writes CSV too)."""
    if fmt not in FORMATS:
        raise UsageError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    frame = hasattr(rows, "write_parquet")  # polars; else Arrow
    buffer = io.BytesIO()
    if fmt != "parquet":
        buffer.write((to_csv(rows) if frame else arrow_to_csv(rows)).encode())
    elif frame:
        rows.write_parquet(buffer)
    else:
        import pyarrow.parquet as pq

        pq.write_table(rows, buffer)
    write_output(path, buffer.getvalue())


def write_output(path: Path, data: bytes | Callable[[BinaryIO], object]) -> None:
    """Write a command's output file (checked first by :func:`check_output`), ``data`` or what
    ``data(file)`` writes: its folder made where missing, the file written atomically, or a
    device or pipe written to as a stream."""
    make_dir(Path(path).parent)
    write_file_atomic(path, data if callable(data) else lambda fh: fh.write(data))


def make_dir(directory: Path) -> None:
    """Create an output directory (and its parents); PipelineError when that is impossible."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PipelineError(f"cannot write to {directory}: {why(directory, exc)}") from None


def check_output(
    path: Path, data_dir: Path | None, force: bool, option: str = "-o", replace: bool = False
) -> None:
    """The one rule of every file a command writes (``-o FILE``), checked before any work:

    - never one of a data directory's own files (its tables, manifest, catalog, lock, the
      folder of its variants' files): ``data_dir``'s, or any folder's above ``path`` that is a
      data directory (:func:`data_dir_above`): that would lose data;
    - a device or a pipe (``/dev/stdout``, a FIFO) is written to as a stream, never replaced;
    - an existing regular file (or a link to one) is replaced only with ``force`` (or
      ``replace``: the command's own default file, e.g. ``data/explorer.html``); a folder, a
      socket or a link that loops is refused;
    - its folder, or the nearest folder above it (which the write creates), must take a new
      file now, not after minutes of work (a read-only mount, an immutable folder).

    UsageError (exit 2) for a path that can never be written, PipelineError (exit 1) for a
    folder that cannot be written to now. Names longer than a file system takes are refused
    when the command line is read (``pipeline.cli.app``).
    """
    path = Path(path)
    refuse_data_files(path, data_dir, option)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(f"{option} {path} is a link that points back at itself") from None
        raise PipelineError(f"cannot write {path}: {why(path, exc)}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(f"{option} {path} is a folder: give a file name")
    if mode is not None and stat.S_ISSOCK(mode):
        raise UsageError(f"{option} {path} is a socket: give a file name")
    if mode is not None and not stat.S_ISREG(mode):
        return  # a device or a pipe: written to as a stream (files.write_file_atomic)
    if mode is not None and not (force or replace):
        raise UsageError(f"{option} {path} exists: add --force to replace it")
    check_folder_writable(resolved(path, option).parent, path)


def check_output_folder(path: Path, option: str = "-o") -> None:
    """What :func:`check_output` checks of a folder a command writes (``report --out``,
    ``export dataset -o``) before the work, the data directory's own places aside (each
    command says which it refuses): not a file, a device or a link that loops, and it or the
    nearest folder above it takes a new file now."""
    path = Path(path)
    target = resolved(path, option)
    if target.exists() and not target.is_dir():
        kind = "a file, not a folder" if target.is_file() else "not a folder"
        raise UsageError(f"{option} {path} is {kind}: give a folder")
    check_folder_writable(target, path)


def resolved(path: Path, option: str = "-o") -> Path:
    """``path`` with its links followed (to where a write lands); UsageError for a loop."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        raise UsageError(f"{option} {path} is a link that points back at itself") from None


def check_folder_writable(folder: Path, given: Path) -> None:
    """PipelineError unless ``folder`` (or, where it does not exist yet, the nearest folder
    above it, where the write will create it) takes a new file: a file created there and
    removed at once, which finds a read-only mount, a folder without write permission and an
    immutable one alike, and a file standing where a folder should be. ``given``: the path as
    the user typed it, which the message names."""
    existing = Path(folder)
    while not existing.exists() and existing != existing.parent:
        if existing.is_symlink():  # a dangling link in place of a folder
            raise PipelineError(f"cannot write {given}: {existing} is a link to nothing")
        existing = existing.parent
    if not existing.is_dir():  # exit 1, as for any file that cannot be written
        raise PipelineError(f"cannot write {given}: {existing} is a file, not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".stb-probe-", dir=existing)
    except OSError as exc:
        raise PipelineError(
            f"cannot write {given}: {existing} takes no new file ({why(existing, exc)})"
        ) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def data_dir_above(path: Path) -> Path | None:
    """The nearest folder above ``path`` (links followed) that is a data directory: it holds
    the lock every build leaves (``.stb.lock``), or a manifest beside a catalog."""
    for folder in resolved(path, "-o").parents:
        if (folder / LOCK_NAME).exists() or all(
            (folder / name).is_file() for name in ("manifest.json", "stb.duckdb")
        ):
            return folder
    return None


def dataset_above(path: Path) -> Path | None:
    """The nearest folder above ``path`` that is an exported dataset (``export dataset``: its
    card and checksums), every file of which its checksums cover."""
    for folder in resolved(path, "-o").parents:
        if all((folder / name).is_file() for name in DATASET_NAMES):
            return folder
    return None


def refuse_data_files(path: Path, data_dir: Path | None, option: str = "-o") -> None:
    """UsageError where writing ``path`` would replace or add one of a data directory's own
    files (:func:`among_tables`), of ``data_dir`` or of a data directory above ``path``, or
    any file of an exported dataset (its checksums would no longer hold)."""
    if data_dir is not None:
        refuse_among_tables(path, Path(data_dir), option)
    found = data_dir_above(path)
    if found is not None:
        refuse_among_tables(path, found, option)
    dataset = dataset_above(path)
    if dataset is not None:
        raise UsageError(
            f"{option} {path} would write into the exported dataset {dataset}, whose checksums "
            "cover every file: write it elsewhere"
        )


#: What marks a folder as an exported dataset (``export dataset``).
DATASET_NAMES = ("dataset.json", "SHA256SUMS")


#: Names at the top of a data directory that belong to it: the catalog, the manifest, the
#: one-shot `expect`'s lookup (:mod:`pipeline.store.lookup`) and the folder of the variants' own
#: files (besides any ``*.parquet``, read as a table, and any name starting with a dot: the
#: lock, the journal, temporary files).
DATA_DIR_NAMES = ("stb.duckdb", "manifest.json", "states.lookup", "variants")


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
            f"{option} {path} would write {where}, where the data directory {data_dir} keeps "
            f"its tables: give a "
            f"folder of its own (e.g. {Path(data_dir) / 'out'}) or a place elsewhere"
        )


def inside(path: Path, directory: Path) -> bool:
    """Whether ``path`` is ``directory`` or lies under it (links followed)."""
    try:
        return path.resolve().is_relative_to(directory.resolve())
    except (OSError, RuntimeError):  # a link loop: not a place we would write into anyway
        return False
