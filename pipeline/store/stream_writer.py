"""Writing Parquet tables a batch at a time, so that memory does not grow with the table.

Each batch (a dict of equal-length numpy columns, ``numpy.ma.MaskedArray`` for nulls) becomes
Arrow arrays; batches are gathered into row groups of about :data:`ROW_GROUP_ROWS` rows, so a
table of hundreds of millions of rows is never held whole. The row groups are encoded side by
side on a pool of threads shared by the tables (:func:`write_threads` of them: every core), each
as a Parquet file of its own in memory, and spliced into the table's one file in order
(:mod:`pipeline.store.splice`): the file is the one a single writer would write, byte for byte,
but its encoding runs on every core while the producer (a compiled solve, also GIL-free)
computes the next rows. At most a few row groups per thread wait in memory.

A file is written under a hidden temporary name next to its final path and renamed into place
only when every table is complete: on any exception (KeyboardInterrupt included) the temporary
files are removed and the old files, if any, are left as they were.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from pipeline.errors import UsageError
from pipeline.store import splice
from pipeline.store.files import HashedFile, _tmp_name, cannot_write
from pipeline.store.manifest import PARQUET_OPTIONS

#: Rows per row group: pyarrow's default row group size, a few tens of MB per group.
ROW_GROUP_ROWS = 1 << 20
#: Row groups per table handed to the encoders and not yet in the file, beyond one per thread:
#: enough to keep every thread busy, few enough to bound memory.
QUEUE_BATCHES = 2
#: Row group sizes whose encoded constant columns a table keeps (:meth:`_TableWriter._encoded`).
CONSTANT_PARTS = 8
#: Environment variable that sets the number of encoding threads (default: every core).
THREADS_ENV = "STB_WRITE_THREADS"
#: Seconds at a time the producer waits for room, to notice a failed encoder.
POLL = 0.1
#: The tables' Parquet settings (fixed, so that equal tables are equal bytes).
WRITE_OPTIONS: dict[str, Any] = PARQUET_OPTIONS

Columns = Mapping[str, np.ndarray]


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
    workers = write_threads()
    with contextlib.ExitStack() as stack:
        stack.callback(_remove, tmps.values())  # runs on success too: then nothing is left
        pool = ThreadPoolExecutor(workers, thread_name_prefix="stb-encode")
        writers = {
            name: stack.enter_context(
                _TableWriter(
                    tmps[name],
                    schemas[name],
                    (constants or {}).get(name, {}),
                    (options or {}).get(name) or WRITE_OPTIONS,
                    pool,
                    workers + QUEUE_BATCHES,
                )
            )
            for name in paths
        }
        # on failure, before the writers drop their files: no new row group starts encoding
        stack.callback(pool.shutdown, wait=True, cancel_futures=True)
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


def write_threads() -> int:
    """Threads that encode row groups: ``$STB_WRITE_THREADS``, else the cores this process
    may run on (two here, sixteen on a GPU machine)."""
    given = os.environ.get(THREADS_ENV, "").strip()
    if given:
        try:
            return max(1, int(given))
        except ValueError:
            raise UsageError(f"{THREADS_ENV} must be a whole number, not {given!r}") from None
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def record_batch(
    cols: Columns,
    schema: pa.Schema,
    constants: Mapping[str, Any],
    cache: dict[str, pa.Array] | None = None,
) -> pa.RecordBatch:
    """One Arrow record batch of ``schema`` from numpy columns (masked entries become null) or
    Arrow arrays (e.g. list or string columns; cast to the schema's type). ``cache`` keeps the
    constant columns by name for the next batches, each a prefix (a slice, no copy) of the
    longest column made so far: building a table's constant and null columns anew for each
    batch took as long as encoding a batch of the real ones, and a big box's batches come in a
    dozen sizes."""
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
            arrays.append(numpy_column(np.ma.getdata(col), f.type, mask))
        elif f.name not in constants:
            raise ValueError(f"no column {f.name!r} in the batch and no constant for it")
        elif cache is None:
            arrays.append(constant_column(f, constants[f.name], n))
        else:
            made = cache.get(f.name)
            if made is None or len(made) < n:
                # room for the next batches too, up to a row group's worth
                size = max(n, min(2 * len(made), ROW_GROUP_ROWS)) if made is not None else n
                made = cache[f.name] = constant_column(f, constants[f.name], size)
            arrays.append(made.slice(0, n))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


#: numpy's type of each Arrow type :func:`numpy_column` takes over without a copy.
_NUMPY: dict[pa.DataType, np.dtype[Any]] = {
    pa.int8(): np.dtype(np.int8),
    pa.int16(): np.dtype(np.int16),
    pa.int32(): np.dtype(np.int32),
    pa.int64(): np.dtype(np.int64),
    pa.float64(): np.dtype(np.float64),
}


def numpy_column(data: np.ndarray, kind: pa.DataType, mask: np.ndarray | None) -> pa.Array:
    """``data`` as an Arrow array of type ``kind``, null where ``mask`` is true. Numbers of the
    same type and booleans are wrapped straight from their buffers (``pa.array`` takes the
    same values, but its first call imports pandas: a second of a small build); anything else
    (a cast) goes through ``pa.array``."""
    n = len(data)
    validity = None if mask is None else pa.py_buffer(np.packbits(~mask, bitorder="little"))
    if kind == pa.bool_() and data.dtype == np.bool_:
        values = pa.py_buffer(np.packbits(data, bitorder="little"))
    elif _NUMPY.get(kind) == data.dtype and data.flags.c_contiguous:
        values = pa.py_buffer(data)
    else:
        return pa.array(data, type=kind, mask=mask)
    return pa.Array.from_buffers(kind, n, [validity, values])


def constant_column(field: pa.Field, value: Any, n: int) -> pa.Array:
    """``n`` rows of ``value`` (None: null) of ``field``'s type (a dictionary type: one entry,
    every index 0). Built from numpy where it can be (``pa.scalar`` and ``pa.array`` of a
    list import pandas)."""
    kind = field.type
    if pa.types.is_dictionary(kind):
        indices = numpy_column(np.zeros(n, np.int32), pa.int32(), None)
        return pa.DictionaryArray.from_arrays(
            indices, constant_column(field.with_type(kind.value_type), value, 1)
        )
    if value is None:
        return pa.nulls(n, kind)
    if kind == pa.string() and isinstance(value, str):
        data = value.encode()
        offsets = np.arange(n + 1, dtype=np.int32) * len(data)
        return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])
    if kind == pa.bool_() or kind in _NUMPY:
        dtype = np.dtype(np.bool_) if kind == pa.bool_() else _NUMPY[kind]
        return numpy_column(np.full(n, value, dtype=dtype), kind, None)
    return pa.repeat(pa.scalar(value, type=kind), n)


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


class _TableWriter:
    """One table's file: its row groups encoded by the shared pool's threads
    (:func:`pipeline.store.splice.encode_part`), and appended in order by whichever thread
    finishes the next one; the footer written last."""

    def __init__(
        self,
        path: Path,
        schema: pa.Schema,
        constants: Mapping[str, Any],
        options: Mapping[str, Any],
        pool: ThreadPoolExecutor,
        depth: int,
    ) -> None:
        self.schema, self.constants = _physical(schema, constants), constants
        # The Arrow schema is not stored, so a constant written as a dictionary reads back as
        # the schema's type (a string); the schema's key-value metadata is kept explicitly.
        self.metadata = schema.metadata
        self.options = options
        self.path = path
        self.pool, self.depth = pool, depth
        self.file = HashedFile(path)  # closed by finish, or abandoned by __exit__
        self.pending: list[Columns] = []
        self.pending_rows = 0
        self.rows = 0
        self.submitted = 0  # row groups handed to the pool
        self.written = 0  # row groups in the file
        self.ready: dict[int, splice.Part] = {}  # encoded, waiting for the ones before them
        self.appending = False  # a thread is appending parts to the file
        self.stopped = False
        self.error: BaseException | None = None
        self.groups: list[Any] = []  # the file's row groups, offsets in place
        self.first: splice.Part | None = None  # whose footer the file's footer starts from
        self.position = len(splice.MAGIC)
        self.cond = threading.Condition()
        self.local = threading.local()  # each encoder's constant columns (record_batch's cache)
        # the constant columns of a row group, encoded, by (columns, rows): see _encoded
        self.constant_parts: dict[tuple[tuple[str, ...], int], splice.Part] = {}
        # the file of no rows: the footer a spliced row group takes (and an empty table's)
        self.empty = splice.encode_part(None, self.schema, self.options, self.metadata)
        self._write(splice.MAGIC)

    def __enter__(self) -> _TableWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        # On failure: parts still encoding are dropped when they finish; the file goes.
        with self.cond:
            self.stopped = True
        self.file.abandon()  # nothing to do after finish

    def put(self, cols: Columns) -> None:
        """Add a batch; hand a full row group to the pool, waiting while too many are in
        flight; re-raise an encoder's error."""
        self._check()
        self.pending.append(cols)
        self.pending_rows += len(next(iter(cols.values()))) if cols else 0
        if self.pending_rows >= ROW_GROUP_ROWS:
            self._submit()

    def finish(self) -> None:
        """Encode what is left, wait for every row group (re-raising an encoder's error), write
        the footer, close the file and flush it to disk."""
        if self.pending:
            self._submit()
        with self.cond:
            while self.written < self.submitted and self.error is None:
                self.cond.wait(POLL)
        self._check()
        if self.first is None:  # no rows: the file of an empty table, as a writer leaves it
            self.first = self.empty
        self._write(splice.footer(self.first.meta, self.groups, self.rows))
        try:
            self.file.close()  # on disk, its sha256 known
        except OSError as exc:
            raise cannot_write(self.path, exc) from None

    def _submit(self) -> None:
        """Hand the pending batches to the pool as the next row group."""
        batches, self.pending, self.pending_rows = self.pending, [], 0
        with self.cond:
            while self.submitted - self.written >= self.depth and self.error is None:
                self.cond.wait(POLL)
            seq = self.submitted
            self.submitted += 1
        self._check()
        self.pool.submit(self._encode, seq, batches)

    def _check(self) -> None:
        """Raise the error an encoder met, if any."""
        if self.error is not None:
            raise self.error

    def _encode(self, seq: int, batches: list[Columns]) -> None:
        """(On a pool thread.) Encode one row group, then append what is ready in order."""
        try:
            if self.stopped or self.error is not None:
                return
            part = self._encoded(batches)
            with self.cond:
                self.ready[seq] = part
                if self.appending:  # the thread appending will find it
                    return
                self.appending = True
            self._append_ready()
        except BaseException as exc:  # raised in the producer, at its next put or finish
            with self.cond:
                self.error = self.error or exc
                self.appending = False
                self.cond.notify_all()

    def _encoded(self, batches: list[Columns]) -> splice.Part:
        """``batches`` encoded as one row group. Where every batch gives the same columns and
        the others are constants (a big box's policy: 7 of 13), the given ones are encoded
        here and the constant ones once per row group size (:meth:`_constant_part`), the two
        parts spliced into the part of the whole row group (:func:`pipeline.store.splice.merged`:
        the same bytes)."""
        cache = self.local.__dict__.setdefault("cache", {})
        names = batches[0].keys()
        given = [n for n in self.schema.names if n in names]
        rest = [n for n in self.schema.names if n not in names]
        rows = sum(len(next(iter(c.values()))) if c else 0 for c in batches)
        if (
            not given
            or not rest
            or rows == 0
            or any(c.keys() != names for c in batches[1:])
            or any(n not in self.constants for n in rest)  # record_batch says which
        ):
            table = pa.Table.from_batches(
                [record_batch(c, self.schema, self.constants, cache) for c in batches]
            )
            return splice.encode_part(table, self.schema, self.options, self.metadata)
        schema = pa.schema([self.schema.field(n) for n in given])
        table = pa.Table.from_batches(
            [record_batch(c, schema, self.constants, cache) for c in batches], schema=schema
        )
        part = splice.encode_part(table, schema, self.options, self.metadata)
        return splice.merged(
            [(part, given), (self._constant_part(rest, rows), rest)], self.schema.names, self.empty
        )

    def _constant_part(self, names: list[str], rows: int) -> splice.Part:
        """The constant columns ``names`` of a row group of ``rows`` rows, encoded (once per
        size: a big box's row groups are mostly a million rows each)."""
        key = (tuple(names), rows)
        with self.cond:
            part = self.constant_parts.get(key)
        if part is None:
            schema = pa.schema([self.schema.field(n) for n in names])
            columns = [constant_column(f, self.constants[f.name], rows) for f in schema]
            table = pa.Table.from_arrays(columns, schema=schema)
            part = splice.encode_part(table, schema, self.options, self.metadata)
            with self.cond:
                if len(self.constant_parts) >= CONSTANT_PARTS:  # the oldest size goes
                    del self.constant_parts[next(iter(self.constant_parts))]
                self.constant_parts[key] = part
        return part

    def _append_ready(self) -> None:
        """Append the parts that are next in order, until the next one is not encoded yet."""
        while True:
            with self.cond:
                part = self.ready.pop(self.written, None)
                if part is None or self.stopped:
                    self.appending = False
                    self.cond.notify_all()
                    return
            self.first = self.first or part
            groups = part.meta.get(splice.FILE_ROW_GROUPS)[1]
            self.groups += splice.shifted(groups, self.position - 4, len(self.groups))
            self._write(part.chunks)
            self.position += len(part.chunks)
            self.rows += part.rows
            with self.cond:
                self.written += 1
                self.cond.notify_all()

    def _write(self, data: Any) -> None:
        try:
            self.file.write(data)
        except OSError as exc:  # a full disk: one line naming the table
            raise cannot_write(self.path, exc) from None


def _remove(paths: Iterable[Path]) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
