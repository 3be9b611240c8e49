"""Writing result files (query output, charts, the report page) atomically, and as CSV.

A reader never sees a half-written file: each file is written under a temporary name in the same
directory, flushed to disk and then renamed over the old one (as
:func:`pipeline.tables.write_atomic`
does for Parquet tables).
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import polars as pl

from pipeline.errors import PipelineError, UsageError

FORMATS = ("table", "csv", "parquet")


def write_bytes_atomic(path: Path, data: bytes, make_dirs: bool = True) -> None:
    """Write ``data`` to ``path``: complete on disk before it gets its name (``make_dirs``:
    create missing parent directories)."""
    path = Path(path)
    if path.exists() and not path.is_file():
        # a pipe, a terminal or /dev/stdout: there is nothing to rename over, so write straight in
        try:
            with open(path, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise PipelineError(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    if path.is_symlink():
        path = path.resolve()  # replace the file the link points to, never the link itself
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if make_dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise PipelineError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def flatten_lists(frame: pl.DataFrame) -> pl.DataFrame:
    """List columns (moves, tiles) as text such as ``[3, 6]``, so that CSV can hold them."""
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


def export(frame: pl.DataFrame, fmt: str, path: Path) -> None:
    """Write ``frame`` to ``path`` as ``csv`` or ``parquet`` (``table`` writes CSV too)."""
    if fmt not in FORMATS:
        raise UsageError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    data = to_parquet(frame) if fmt == "parquet" else to_csv(frame).encode()
    write_bytes_atomic(path, data)
