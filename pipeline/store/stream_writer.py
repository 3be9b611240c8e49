"""Writing Parquet tables a batch at a time, so that memory does not grow with the table.

Each batch (a dict of equal-length numpy columns, ``numpy.ma.MaskedArray`` for nulls) becomes
Arrow arrays; batches are gathered into row groups of about :data:`ROW_GROUP_ROWS` rows, so a
table of hundreds of millions of rows is never held whole. Every table is encoded by its own
thread fed through a short queue: Parquet encoding releases the GIL, so it overlaps the producer
(a compiled solve, also GIL-free) and the other tables, while at most :data:`QUEUE_BATCHES`
batches per table wait in memory.

A file is written under a hidden temporary name next to its final path and renamed into place
only when every table is complete: on any exception (KeyboardInterrupt included) the temporary
files are removed and the old files, if any, are left as they were.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.store.background import Background
from pipeline.store.files import HashedFile, _tmp_name, cannot_write
from pipeline.store.manifest import PARQUET_OPTIONS

#: Rows per row group: pyarrow's default row group size, a few tens of MB per group.
ROW_GROUP_ROWS = 1 << 20
#: Batches waiting per table: enough to keep its thread busy, few enough to bound memory.
QUEUE_BATCHES = 2
#: The tables' Parquet settings (fixed, so that equal tables are equal bytes).
WRITE_OPTIONS: dict[str, Any] = PARQUET_OPTIONS

Columns = Mapping[str, np.ndarray]


def write_streamed(
    path: Path | str,
    batches: Iterable[Columns],
    schema: pa.Schema,
    constants: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> int:
    """Write ``batches`` (numpy columns) to the Parquet file ``path`` with ``schema``.

    A schema field missing from a batch is filled with its value in ``constants`` (e.g. the
    variant name); ``options`` are ParquetWriter options (default :data:`WRITE_OPTIONS`).
    Returns the number of rows written. The file appears only when complete.
    """
    rows = write_streamed_many(
        {"t": Path(path)},
        ({"t": b} for b in batches),
        {"t": schema},
        {"t": constants or {}},
        {"t": options} if options else None,
    )
    return rows["t"]


def write_streamed_many(
    paths: Mapping[str, Path],
    batches: Iterable[Any],
    schemas: Mapping[str, pa.Schema],
    constants: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    digests: dict[str, str] | None = None,
) -> dict[str, int]:
    """Write several tables from one stream: each item maps a table name to its batch (or None),
    as a mapping or as attributes (a :class:`pipeline.games.shutbox.stream.Batch`).

    One pass over ``batches`` (e.g. a solve that yields the states and policy rows of each
    layer together) writes every table in ``paths``; all files are renamed into place at the
    end, or all temporary files removed on failure. Returns the rows written per table, and
    fills ``digests`` (when given) with each file's sha256, hashed as it was written.
    """
    tmps = {name: _tmp_name(Path(p)) for name, p in paths.items()}
    with contextlib.ExitStack() as stack:
        stack.callback(_remove, tmps.values())  # runs on success too: then nothing is left
        writers = {
            name: stack.enter_context(
                _TableThread(
                    tmps[name],
                    schemas[name],
                    (constants or {}).get(name, {}),
                    (options or {}).get(name) or WRITE_OPTIONS,
                )
            )
            for name in paths
        }
        for item in batches:
            for name, writer in writers.items():
                cols = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
                if cols is not None:
                    writer.put(cols)
        for writer in writers.values():
            writer.finish()
        for name, tmp in tmps.items():
            os.replace(tmp, paths[name])
        if digests is not None:
            digests.update({name: w.file.sha256 for name, w in writers.items() if w.file.sha256})
        return {name: w.rows for name, w in writers.items()}


def record_batch(
    cols: Columns,
    schema: pa.Schema,
    constants: Mapping[str, Any],
    cache: dict[tuple[str, int], pa.Array] | None = None,
) -> pa.RecordBatch:
    """One Arrow record batch of ``schema`` from numpy columns (masked entries become null) or
    Arrow arrays (e.g. list or string columns; cast to the schema's type). ``cache`` keeps the
    constant columns by (name, rows) for the next batch of the same size: building a table's
    twenty null columns anew took as long as encoding a batch of two real ones."""
    n = len(next(iter(cols.values()))) if cols else 0
    unknown = set(cols) - set(schema.names)
    if unknown:  # a misnamed column would otherwise be written as nulls, silently
        raise ValueError(f"batch columns not in the table's schema: {sorted(unknown)}")
    arrays = []
    for f in schema:
        if f.name in cols and isinstance(cols[f.name], pa.Array):
            # built by Arrow (or polars) already: lists, strings
            built: Any = cols[f.name]
            arrays.append(built if built.type == f.type else built.cast(f.type))
        elif f.name in cols:
            col = cols[f.name]
            mask = np.ma.getmaskarray(col) if isinstance(col, np.ma.MaskedArray) else None
            if mask is not None and not mask.any():
                mask = None  # no validity bitmap when nothing is null
            arrays.append(pa.array(np.ma.getdata(col), type=f.type, mask=mask))
        elif cache is not None and (f.name, n) in cache:
            arrays.append(cache[f.name, n])
        elif f.name in constants and pa.types.is_dictionary(f.type):
            dictionary = pa.array([constants[f.name]], type=f.type.value_type)
            arrays.append(pa.DictionaryArray.from_arrays(np.zeros(n, np.int32), dictionary))
        elif f.name in constants:
            arrays.append(pa.repeat(pa.scalar(constants[f.name], type=f.type), n))
        else:
            raise ValueError(f"no column {f.name!r} in the batch and no constant for it")
        if cache is not None and f.name not in cols:
            if len(cache) > 4 * len(schema):  # batches of many sizes: start afresh
                cache.clear()
            cache[f.name, n] = arrays[-1]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _physical(schema: pa.Schema, constants: Mapping[str, Any]) -> pa.Schema:
    """The schema as written: constant strings as dictionaries (a constant column then costs
    one dictionary entry and run-length encoded zeros, instead of one string per row)."""
    fields = [
        f.with_type(pa.dictionary(pa.int32(), f.type))
        if constants.get(f.name) is not None and pa.types.is_string(f.type)
        else f
        for f in schema
    ]
    return pa.schema(fields)


class _TableThread:
    """One table's ParquetWriter, fed batches by a worker thread (:class:`Background`) through a
    bounded queue."""

    def __init__(
        self,
        path: Path,
        schema: pa.Schema,
        constants: Mapping[str, Any],
        options: Mapping[str, Any],
    ) -> None:
        self.schema, self.constants = _physical(schema, constants), constants
        self.path = path
        self.file = HashedFile(path)  # closed by finish, or abandoned by __exit__
        # The Arrow schema is not stored, so a constant written as a dictionary reads back as
        # the schema's type (a string); the schema's key-value metadata is kept explicitly.
        # a deep copy: pyarrow adds use_byte_stream_split's columns to the caller's
        # column_encoding dict, which a second writer given the same options then refuses
        self.writer = pq.ParquetWriter(
            self.file.arrow_stream(), self.schema, store_schema=False, **copy.deepcopy(options)
        )
        if schema.metadata:
            self.writer.add_key_value_metadata(schema.metadata)
        self.pending: list[pa.RecordBatch] = []
        self.cache: dict[tuple[str, int], pa.Array] = {}  # constant columns, by (name, rows)
        self.rows = 0
        self.worker = Background(depth=QUEUE_BATCHES, name=f"stb-{path.name}")

    def __enter__(self) -> _TableThread:
        return self

    def __exit__(self, *exc: object) -> None:
        # On failure: stop the worker after its current batch, then drop the file.
        self.worker.close()
        self.file.abandon(self.writer)  # nothing to do after finish

    def put(self, cols: Columns) -> None:
        """Queue a batch; wait while the queue is full; re-raise the worker's error."""
        self.worker.submit(self._add, cols)

    def finish(self) -> None:
        """Write what is left, wait for the worker (re-raising its error), close the file and
        flush it to disk."""
        self.worker.submit(self._flush)
        self.worker.wait()
        try:
            self.writer.close()
            self.file.close()  # on disk, its sha256 known
        except OSError as exc:
            raise cannot_write(self.path, exc) from None

    def _add(self, cols: Columns) -> None:
        self.pending.append(record_batch(cols, self.schema, self.constants, self.cache))
        if sum(b.num_rows for b in self.pending) >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        """Write the pending batches as one row group."""
        size = sum(b.num_rows for b in self.pending)
        if size:
            try:
                self.writer.write_table(pa.Table.from_batches(self.pending), row_group_size=size)
            except OSError as exc:  # a full disk: one line naming the table
                raise cannot_write(self.path, exc) from None
            self.rows += size
        self.pending.clear()


def _remove(paths: Iterable[Path]) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
