"""Writing Parquet tables a batch at a time, so that memory does not grow with the table.

Each batch (a dict of equal-length numpy columns, ``numpy.ma.MaskedArray`` for nulls) becomes
one record batch; batches are gathered into row groups of about :data:`ROW_GROUP_ROWS` rows, so a
table of hundreds of millions of rows is never held whole. The file is written under a hidden
temporary name next to its final path and renamed into place only when complete: on any
exception (KeyboardInterrupt included) the temporary file is removed and the old file, if any,
is left as it was.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.manifest import PARQUET_OPTIONS

#: Rows per row group: pyarrow's default row group size, a few tens of MB per group.
ROW_GROUP_ROWS = 1 << 20
#: The tables' Parquet settings (fixed, so that equal tables are equal bytes).
WRITE_OPTIONS: dict[str, Any] = PARQUET_OPTIONS

Columns = Mapping[str, np.ndarray]


def write_streamed(
    path: Path | str,
    batches: Iterable[Columns],
    schema: pa.Schema,
    constants: Mapping[str, Any] | None = None,
) -> int:
    """Write ``batches`` (numpy columns) to the Parquet file ``path`` with ``schema``.

    A schema field missing from a batch is filled with its value in ``constants`` (e.g. the
    variant name). Returns the number of rows written. The file appears only when complete.
    """
    rows = write_streamed_many(
        {"t": Path(path)}, ({"t": b} for b in batches), {"t": schema}, {"t": constants or {}}
    )
    return rows["t"]


def write_streamed_many(
    paths: Mapping[str, Path],
    batches: Iterable[Any],
    schemas: Mapping[str, pa.Schema],
    constants: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, int]:
    """Write several tables from one stream: each item maps a table name to its batch (or None),
    as a mapping or as attributes (a :class:`pipeline.games.shutbox_stream.Batch`).

    One pass over ``batches`` (e.g. a solve that yields the states and policy rows of each
    layer together) writes every table in ``paths``; all files are renamed into place at the
    end, or all temporary files removed on failure. Returns the rows written per table.
    """
    constants = constants or {}
    tmps = {name: _tmp_path(Path(p)) for name, p in paths.items()}
    rows = dict.fromkeys(paths, 0)
    with contextlib.ExitStack() as stack:
        stack.callback(_remove, tmps.values())  # runs on success too: then nothing is left
        writers = {
            name: stack.enter_context(_GroupedWriter(tmps[name], schemas[name])) for name in paths
        }
        for item in batches:
            for name in writers:
                cols = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
                if cols is not None:
                    batch = record_batch(cols, schemas[name], constants.get(name, {}))
                    writers[name].write(batch)
                    rows[name] += batch.num_rows
        for writer in writers.values():
            writer.close()
        for name, tmp in tmps.items():
            os.replace(tmp, paths[name])
    return rows


def record_batch(cols: Columns, schema: pa.Schema, constants: Mapping[str, Any]) -> pa.RecordBatch:
    """One Arrow record batch of ``schema`` from numpy columns (masked entries become null)."""
    n = len(next(iter(cols.values()))) if cols else 0
    arrays = []
    for f in schema:
        if f.name in cols:
            col = cols[f.name]
            mask = np.ma.getmaskarray(col) if isinstance(col, np.ma.MaskedArray) else None
            if mask is not None and not mask.any():
                mask = None  # no validity bitmap when nothing is null
            arrays.append(pa.array(np.ma.getdata(col), type=f.type, mask=mask))
        elif f.name in constants:
            arrays.append(pa.repeat(pa.scalar(constants[f.name], type=f.type), n))
        else:
            raise ValueError(f"no column {f.name!r} in the batch and no constant for it")
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


class _GroupedWriter:
    """A ParquetWriter that gathers small batches into row groups of ROW_GROUP_ROWS rows."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.writer: pq.ParquetWriter | None = pq.ParquetWriter(path, schema, **WRITE_OPTIONS)
        self.pending: list[pa.RecordBatch] = []
        self.size = 0

    def __enter__(self) -> _GroupedWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(flush=exc[0] is None)

    def write(self, batch: pa.RecordBatch) -> None:
        """Add a batch; write a row group once enough rows are waiting."""
        if batch.num_rows >= ROW_GROUP_ROWS and not self.pending and self.writer is not None:
            self.writer.write_batch(batch, row_group_size=batch.num_rows)  # big: its own group
            return
        self.pending.append(batch)
        self.size += batch.num_rows
        if self.size >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self.size and self.writer is not None:
            table = pa.Table.from_batches(self.pending)
            self.writer.write_table(table, row_group_size=max(self.size, 1))
        self.pending, self.size = [], 0

    def close(self, flush: bool = True) -> None:
        """Write what is left (unless failing) and close the file; safe to call twice."""
        if self.writer is None:
            return
        try:
            if flush:
                self._flush()
        finally:
            self.writer.close()
            self.writer = None


def _tmp_path(final: Path) -> Path:
    """A hidden temporary name next to ``final``, owned by this process."""
    return final.with_name(f".{final.name}.{os.getpid()}.tmp")


def _remove(paths: Iterable[Path]) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def batches_of(table: str, items: Iterable[Any]) -> Iterator[Columns]:
    """The ``table`` attribute of each item (e.g. ``batches_of("policy", solver.batches())``)."""
    for item in items:
        cols = getattr(item, table)
        if cols is not None:
            yield cols
