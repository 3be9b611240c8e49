"""Rewriting one table a variant at a time, straight into its temporary file.

Every table is sorted by variant. A build hands over each variant's rows as soon as they are
computed, in ascending variant order (:meth:`TableMerge.add`); the old file's rows of the
variants it does not replace are copied in between, a slice at a time. So memory holds one
variant's rows and one slice of the old file, never a whole table, and the encoding of one
variant's rows overlaps the computing of the next when the build runs the merge on its writer
thread (:class:`pipeline.store.background.Background`).

The file is written in row groups that never span two variants: each variant's rows are cut
into groups of :data:`SLICE_ROWS` rows, its last group shorter. So the bytes depend only on the
rows, never on how they were handed over; nothing is held from one variant to the next; and a
reader that filters on ``variant`` reads only that variant's row groups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from pipeline.errors import TableError, first_line
from pipeline.store import manifest, schema
from pipeline.store.files import HashedFile, _tmp_name, cannot_write
from pipeline.store.footers import footer, recorded
from pipeline.store.layout import logical_name
from pipeline.store.schema import (  # noqa: F401  (part of this module's interface)
    COLUMNS_KEY,
    RULES_KEY,
)

if TYPE_CHECKING:  # polars and pyarrow load when rows are merged, not to import the store
    import polars as pl
    import pyarrow as pa

#: A variant's rows beyond this many are best produced a slice at a time (:class:`ChunkedRows`).
STREAM_ROWS = 2_000_000
#: Rows per slice of the old file and per row group of the new one: small enough that the rows
#: waiting for a full group cost little memory, big enough to encode and read well.
SLICE_ROWS = 1 << 18
#: Rows per slice read from an old file: a quarter of a row group, so that the old rows a
#: rebuild keeps cost little memory beside the new variant's, in each of the tables it writes.
OLD_SLICE_ROWS = SLICE_ROWS // 4
#: Parquet writer settings (fixed, so that equal tables are equal bytes).
WRITE_OPTIONS: dict[str, Any] = manifest.PARQUET_OPTIONS
#: Columns readers filter by: the only ones given min/max statistics (for row-group pruning).
FILTER_COLUMNS = ("variant", "strategy", "state_id", "tiles", "roll")
#: Columns of (nearly) distinct values, where a dictionary costs time and saves nothing.
DISTINCT_COLUMNS = ("state_id", "next_state_id")


def write_options(columns: pa.Schema) -> dict[str, Any]:
    """ParquetWriter options of a shared table with ``columns``: zstd, dictionaries where values
    repeat (not floats or state ids), statistics on :data:`FILTER_COLUMNS`. Against dictionaries
    and statistics on every column: a fifth less encoding time, and smaller files."""
    import pyarrow as pa

    names = columns.names
    repeat = [
        f.name
        for f in columns
        if f.name not in DISTINCT_COLUMNS and not pa.types.is_floating(f.type)
    ]
    stats = [c for c in FILTER_COLUMNS if c in names]
    return {**WRITE_OPTIONS, "use_dictionary": repeat, "write_statistics": stats}


@dataclass(frozen=True)
class ChunkedRows:
    """A variant's rows produced a slice at a time, for tables too large to build at once.

    ``chunks()`` yields frames with the columns and dtypes of ``schema``, ``height`` rows in all.
    """

    height: int
    schema: pl.Schema
    chunks: Callable[[], Iterator[pl.DataFrame]]


@dataclass(frozen=True)
class StagedTable:
    """A merged table already written (and flushed) under its temporary name, ready to commit."""

    path: Path
    num_rows: int
    variants: dict[str, int]
    sha256: str | None = None
    """The file's sha256 when known from writing it (else the commit reads it back)."""


#: A table's rows of one variant: one frame, or slices made as they are written.
Rows: TypeAlias = "pl.DataFrame | ChunkedRows"


def slices(rows: Rows) -> Iterator[pl.DataFrame]:
    """A variant's rows in slices of at most :data:`SLICE_ROWS` rows."""
    pieces = rows.chunks() if isinstance(rows, ChunkedRows) else iter([rows])
    for piece in pieces:
        for start in range(0, piece.height, SLICE_ROWS):
            yield piece.slice(start, SLICE_ROWS)


def unfit(path: Path, exc: Exception) -> TableError:
    """The one-line error for rows whose columns do not fit the table's."""
    return TableError(f"{path}: the new rows do not fit the table's columns ({first_line(exc)})")


class TableMerge:
    """Table ``path`` rewritten with the rows of the variants :meth:`add` is given (in ascending
    order), keeping the old file's rows of every other variant, in variant order.

    The new file is written under its temporary name; :meth:`finish` flushes it and returns the
    :class:`StagedTable` that :func:`pipeline.store.tables.commit` puts in place. Used as a
    context manager, a failure removes the temporary file. The caller holds the data lock from
    before the first :meth:`add` to the commit, so that the old file cannot change meanwhile.
    """

    def __init__(self, path: Path, new_schemas: Sequence[pl.Schema] = ()) -> None:
        """``new_schemas``: the columns of every variant's new rows, when known in advance;
        otherwise the first new rows' columns are the last the table takes."""
        self.path = Path(path)
        self._new_schemas = list(new_schemas)
        self.tmp = _tmp_name(self.path)
        self.old, self.rules, self._old_empty = _open_old(self.path)
        #: the one variant of each old row group, from its statistics (None: not known)
        self._group_variants = _group_variants(self.path, self.old)
        self._next_group = 0  # the next old row group to look at
        self._batches: Iterator[Any] | None = None  # slices of the old row group being read
        self._ahead: pl.DataFrame | None = None  # old rows read but not placed yet
        self.counts: dict[str, int] = {}
        self._last_added = ""
        self._last_put = ""
        self._buffer: list[pa.Table] = []  # rows of one variant, short of a full row group
        self._buffer_variant: str | None = None
        self._file: HashedFile | None = None
        self._writer: Any = None
        self._target: pl.DataFrame | None = None
        self._arrow_schema: pa.Schema | None = None

    def __enter__(self) -> TableMerge:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is not None:
            self.discard()

    def add(self, variant: str, rows: Rows, rules: dict[str, Any] | None) -> None:
        """Put ``variant``'s rows in place of its old ones (``rules``: its rule set, recorded in
        the file's metadata; None records none)."""
        import polars as pl

        if variant <= self._last_added:
            raise ValueError(
                f"variants come in ascending order: {variant!r} after {self._last_added!r}"
            )
        self._last_added = variant
        self._open(rows.schema)
        self._copy_old(until=variant)
        for piece in slices(rows):
            self._put(piece.select(pl.lit(variant).alias("variant"), pl.exclude("variant")))
        self._flush(final=True)  # the variant's rows end here: its last row group goes out
        self.counts.setdefault(variant, 0)
        self.rules.pop(variant, None)
        if rules is not None:
            self.rules[variant] = rules

    def finish(self) -> StagedTable:
        """Copy the old rows left, close and flush the file; the staged table."""
        try:
            self._open(None)
            self._copy_old(until=None)
            self._flush(final=True)
            self._writer.add_key_value_metadata(recorded(self.rules))
            self._writer.close()
            assert self._file is not None
            self._file.close()  # on disk, its sha256 known
        except OSError as exc:
            self.discard()
            raise cannot_write(self.tmp, exc) from None
        except BaseException:
            self.discard()
            raise
        counts = {v: n for v, n in sorted(self.counts.items()) if n}
        return StagedTable(self.tmp, sum(counts.values()), counts, self._file.sha256)

    def discard(self) -> None:
        """Close and remove the temporary file (nothing of the old table changes)."""
        if self._file is not None:
            self._file.abandon(self._writer)
        self.tmp.unlink(missing_ok=True)

    def _open(self, new_schema: pl.Schema | None) -> None:
        """Open the writer once: the table's one schema, then the old file's columns, then the
        first new rows' own columns (a game may add columns after the schema's)."""
        import polars as pl
        import pyarrow.parquet as pq

        if self._writer is not None:
            return
        empties = [e for e in (schema.empty_frame(logical_name(self.path.stem)),) if e is not None]
        empties += [self._old_empty] if self._old_empty is not None else []
        for columns in [*self._new_schemas, *([new_schema] if new_schema is not None else [])]:
            empty = pl.DataFrame(schema=columns)
            empties.append(
                empty.select(pl.lit("", dtype=pl.String).alias("variant"), pl.exclude("variant"))
            )
        try:
            self._target = pl.concat(empties, how="diagonal_relaxed").clear()
        except pl.exceptions.PolarsError as exc:
            raise unfit(self.path, exc) from None
        # The Arrow schema is not stored: readers take Parquet's types, and the rule sets go in
        # the footer's key-value metadata once every variant is in (see finish).
        self._arrow_schema = self._target.to_arrow().schema.remove_metadata()
        self.path.parent.mkdir(parents=True, exist_ok=True)  # a variant's own folder
        self._file = HashedFile(self.tmp)  # closed by finish or discard
        self._writer = pq.ParquetWriter(
            self._file.arrow_stream(),
            self._arrow_schema,
            store_schema=False,
            **write_options(self._arrow_schema),
        )

    def _next_old(self, until: str | None) -> pl.DataFrame | None:
        """The next slice of old rows that may hold rows to keep before ``until`` (None: no
        more). A row group of one variant is read only if it is kept: the groups of the variant
        being replaced are skipped unread (a rebuild of every variant decodes no old row), and
        reading stops at the first group of a later variant. Files whose groups do not say
        their variant are read slice by slice."""
        import polars as pl

        while True:
            if self._batches is not None:
                batch = next(self._batches, None)
                if batch is not None:
                    rows = pl.from_arrow(batch)
                    assert isinstance(rows, pl.DataFrame)
                    return rows
                self._batches = None
            if self.old is None or self._next_group >= len(self._group_variants):
                return None
            label = self._group_variants[self._next_group]
            if label is not None and until is not None:
                if label > until:
                    return None  # kept, but after the rows of ``until``
                if label == until:
                    self._next_group += 1  # replaced: never decoded
                    continue
            self._batches = self.old.iter_batches(
                batch_size=OLD_SLICE_ROWS, row_groups=[self._next_group], use_threads=False
            )
            self._next_group += 1

    def _copy_old(self, until: str | None) -> None:
        """Put the old rows of the variants before ``until`` and drop those of ``until`` itself
        (the variant being replaced); all old rows when None."""
        import polars as pl

        while True:
            rows = self._ahead if self._ahead is not None else self._next_old(until)
            self._ahead = None
            if rows is None:
                return
            if until is None:
                self._put(rows)
                continue
            before = int((rows["variant"] < until).sum())
            self._put(rows.head(before))
            rest = rows.slice(before)
            rest = rest.filter(pl.col("variant") != until)
            if rest.height:
                self._ahead = rest
                return

    def _put(self, rows: pl.DataFrame) -> None:
        """Add rows (sorted by variant, after every row put before)."""
        import polars as pl
        import pyarrow as pa

        if not rows.height:
            return
        if not rows["variant"].is_sorted():
            raise TableError(f"{self.path} is not sorted by variant; {manifest.REBUILD}")
        if rows["variant"][0] != rows["variant"][-1]:  # old rows of several variants
            for run in rows.partition_by("variant", maintain_order=True):
                self._put(run)
            return
        assert self._target is not None
        extra = [c for c in rows.columns if c not in self._target.columns]
        if extra:
            raise TableError(
                f"{self.path}: the new rows do not fit the table's columns "
                f"({', '.join(extra)} not in the table)"
            )
        try:
            rows = pl.concat([self._target, rows], how="diagonal_relaxed")
            table = rows.to_arrow().cast(self._arrow_schema)
        except (pl.exceptions.PolarsError, pa.ArrowException, ValueError, TypeError) as exc:
            raise unfit(self.path, exc) from None
        variant = rows["variant"][0]
        if variant < self._last_put:
            raise TableError(f"{self.path} is not sorted by variant; {manifest.REBUILD}")
        self._last_put = variant
        self.counts[variant] = self.counts.get(variant, 0) + rows.height
        if variant != self._buffer_variant:
            self._flush(final=True)  # the last group of the variant before
            self._buffer_variant = variant
        self._buffer.append(table)
        self._flush()

    def _flush(self, final: bool = False) -> None:
        """Write the full row groups of the buffered variant's rows (all of them when
        ``final``)."""
        import pyarrow as pa

        size = sum(t.num_rows for t in self._buffer)
        if size < SLICE_ROWS and not (final and size):
            return
        whole = pa.concat_tables(self._buffer)
        full = size if final else size - size % SLICE_ROWS
        for start in range(0, full, SLICE_ROWS):
            group = whole.slice(start, min(SLICE_ROWS, full - start)).combine_chunks()
            try:
                self._writer.write_table(group, row_group_size=SLICE_ROWS)
            except OSError as exc:  # a full disk: one line naming the table
                raise cannot_write(self.tmp, exc) from None
        self._buffer[:] = [whole.slice(full)] if full < size else []


def _group_variants(path: Path, old: Any) -> list[str | None]:
    """The variant of each row group of the old file (none: []), from the ``variant`` column's
    statistics; None for a group whose statistics are missing or span variants."""
    if old is None:
        return []
    return [
        str(s.min) if s is not None and s.min is not None and s.min == s.max else None
        for s in footer(path).stats("variant")
    ]


def _open_old(path: Path) -> tuple[Any, dict[str, Any], pl.DataFrame | None]:
    """The old file (a ParquetFile, or None), its rule sets, and an empty frame of its columns."""
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.exists():
        return None, {}, None
    try:
        found = footer(path)
        old = pq.ParquetFile(path, metadata=found.meta)
        if "variant" not in found.columns:
            raise manifest.not_ours(path)
        rules = found.rules
        empty = pl.from_arrow(old.schema_arrow.empty_table())
        assert isinstance(empty, pl.DataFrame)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise TableError(
            f"{path} is not a readable Parquet table ({first_line(exc)}); {manifest.REBUILD}"
        ) from None
    return old, rules, empty
