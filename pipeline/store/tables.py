"""Reading and writing the Parquet tables: one file per table, rows of every variant, atomic.

Each table holds the rows of many variants. Writing a variant's rows reads the file, drops that
variant's old rows, adds the new ones and writes a temporary file that is then renamed over the
old one, all under a lock on the data directory, so readers only ever see a complete old or new
file and concurrent builds do not lose each other's rows.

One run's tables are committed together (:func:`commit`): every new file is written and flushed
under a hidden temporary name, then a journal listing the renames and the new manifest is put in
place, then the files are renamed and the manifest is written last. A process killed before the
journal exists leaves the old tables; one killed after it leaves tables that the next command
taking the lock (any stage, `verify`, or a reader that finds the journal) completes by redoing the
renames. So each file is always a complete old or new table, and once the journal is settled the
set of tables is all old or all new, as ``manifest.json`` (sha256 per file) records.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline import __version__
from pipeline.errors import PipelineError, TableError, TablesMissingError
from pipeline.store import manifest, schema
from pipeline.store.files import (  # noqa: F401  (part of this module's interface)
    _fsync_dir,
    _pid_alive,
    _tmp_name,
    _tmp_pid,
    _write_synced,
    write_bytes_atomic,
    write_file_atomic,
)
from pipeline.store.layout import (  # noqa: F401  (part of this module's interface)
    JOURNAL_NAME,
    LOCK_NAME,
    LOCK_TIMEOUT_S,
    data_lock,
    ensure_writable,
    logical_name,
    recover,
    settle,
    table_files,
    table_path,
    variant_file,
)

if TYPE_CHECKING:  # pyarrow loads when a table is written or hashed, not to read one
    import pyarrow as pa

RULES_KEY = b"stb.rules"
VERSION_KEY = b"stb.version"
#: Tables whose rows are replaced by key instead of by whole variant: name -> key columns. A
#: write then replaces only the old rows whose key the new rows share (e.g. `build` rewrites the
#: exact benchmark rows of a variant and keeps its simulation rows).
ROW_KEYS: dict[str, tuple[str, ...]] = {"benchmarks": ("variant", "strategy", "method")}
#: A merge touching more rows than this (old or new) is written a slice at a time (see
#: :func:`merged_rows`), so a table of tens of millions of rows is never held whole twice.
STREAM_ROWS = 2_000_000
#: Rows per slice and per row group of a streamed merge: pyarrow's default row group, so that a
#: streamed table has the same bytes as the same table written whole.
SLICE_ROWS = 1_048_576


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


def read_arrow(data_dir: Path, name: str) -> pa.Table | None:
    """The whole table as Arrow, or None when it does not exist; TableError when unreadable."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = table_path(data_dir, name)
    if not path.exists():
        return None
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TableError(
            f"{path} is not a readable Parquet table ({first}); {manifest.REBUILD}"
        ) from None


def table_columns(data_dir: Path, name: str) -> list[str] | None:
    """The column names of a table (None when it does not exist); TableError when unreadable.

    Reads only the Parquet footer, so it is cheap on tables of hundreds of millions of rows.
    """
    path = table_path(data_dir, name)
    return file_columns(path) if path.exists() else None


def file_columns(path: Path) -> list[str]:
    """The column names of one table file, from its footer; TableError when unreadable."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(path).names)
    except (pa.ArrowException, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TableError(
            f"{path} is not a readable Parquet table ({first[:160]}); {manifest.REBUILD}"
        ) from None


def check_ours(path: Path) -> list[str]:
    """The columns of one table file; TableError unless it is readable and one of ours."""
    columns = file_columns(path)
    if "variant" not in columns:
        raise TableError(f"{path} is not one of our tables (no variant column); {manifest.REBUILD}")
    return columns


def read_table(data_dir: Path, name: str, variant: str | None = None) -> pl.DataFrame:
    """Table ``name`` as a polars DataFrame, only ``variant``'s rows when given.

    Reads the shared file and the variants' own files (``variants/<variant>/<name>.parquet``).
    TablesMissingError when the table (or the variant in it) has not been built.
    """
    settle(data_dir)
    files = [variant_file(data_dir, name, variant)] if variant else table_files(data_dir, name)
    files = [f for f in files if f.exists()]
    if not files:
        hint = variant or "all"
        raise TablesMissingError(
            f"{table_path(data_dir, name)} does not exist: run `stb-pipeline build --variant "
            f"{hint}` (or build with the same custom rule options) first"
        )
    frames = [_read_file(path, variant) for path in files]
    frame = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    if variant is not None and frame.height == 0:
        raise TablesMissingError(
            f"{files[0]} has no rows for variant {variant!r}: "
            f"run `stb-pipeline build --variant {variant}` "
            "(or build with the same custom rule options) first"
        )
    return frame


def _read_file(path: Path, variant: str | None) -> pl.DataFrame:
    """One table file's rows (only ``variant``'s when given); TableError when unreadable."""
    check_ours(path)
    try:
        lazy = pl.scan_parquet(path)
        if variant is not None:
            lazy = lazy.filter(pl.col("variant") == variant)
        return lazy.collect()
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TableError(f"{path} is not a readable table ({first}); {manifest.REBUILD}") from None


def table_rules(data_dir: Path, name: str) -> dict[str, Any]:
    """The rule sets recorded in a table's metadata, by variant."""
    import pyarrow.parquet as pq

    path = table_path(data_dir, name)
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta.get(RULES_KEY, b"{}"))


def replace_rows(
    data_dir: Path,
    name: str,
    frames: dict[str, pl.DataFrame],
    rules: dict[str, dict[str, Any]],
) -> Path:
    """Replace the rows of each variant in ``frames`` with the given frame; keep other variants.

    For a table in :data:`ROW_KEYS`, only the old rows sharing a key with a new row are replaced.
    The caller holds :func:`data_lock`. The new file is complete on disk before it gets its name,
    and the manifest is updated after it.
    """
    commit(data_dir, {name: merged_rows(data_dir, name, frames, rules)})
    return table_path(data_dir, name)


def merged_rows(
    data_dir: Path,
    name: str,
    frames: Mapping[str, pl.DataFrame | ChunkedRows],
    rules: dict[str, dict[str, Any]],
) -> pa.Table | StagedTable:
    """Table ``name`` with each variant in ``frames`` given the new rows (others kept as they are;
    for a table in :data:`ROW_KEYS`, the old rows whose key no new row shares).

    When the old file or the new rows are large (over :data:`STREAM_ROWS` rows, or any
    :class:`ChunkedRows`), the merge is written slice by slice straight to the table's temporary
    file and a :class:`StagedTable` is returned instead (same rows, same order).

    The caller holds :func:`data_lock`, so that nobody changes the table before it is committed.
    """
    path = table_path(data_dir, name)
    if name not in ROW_KEYS and _large_merge(path, frames):
        return _stream_merged(path, frames, rules)
    # below STREAM_ROWS every new variant's rows are one DataFrame (_large_merge says so)
    small = {v: f for v, f in frames.items() if isinstance(f, pl.DataFrame)}
    old = read_arrow(data_dir, name)
    canonical = schema.empty_frame(logical_name(name))
    kept: list[pl.DataFrame] = [] if canonical is None else [canonical]
    all_rules: dict[str, Any] = {}
    if old is not None:
        if "variant" not in old.column_names:
            raise TableError(
                f"{path} is not one of our tables (no variant column); {manifest.REBUILD}"
            )
        all_rules = json.loads((old.schema.metadata or {}).get(RULES_KEY, b"{}"))
        old_frame = pl.from_arrow(old)
        assert isinstance(old_frame, pl.DataFrame)
        kept.append(_kept_rows(path, name, old_frame, small))
    for variant in frames:
        all_rules.pop(variant, None)
    all_rules.update({v: r for v, r in rules.items() if v in frames})
    pieces = [f for f in kept if f.height or f is canonical] + [
        f.select(pl.lit(v).alias("variant"), pl.exclude("variant")) for v, f in small.items()
    ]
    try:
        merged = pl.concat(pieces, how="diagonal_relaxed") if pieces else pl.DataFrame()
    except pl.exceptions.PolarsError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TableError(f"{path}: the new rows do not fit the table's columns ({first})") from None
    merged = merged.sort("variant", maintain_order=True)
    table = merged.to_arrow()
    meta = dict(table.schema.metadata or {})
    meta[RULES_KEY] = json.dumps(dict(sorted(all_rules.items())), sort_keys=True).encode()
    meta[VERSION_KEY] = __version__.encode()
    return table.replace_schema_metadata(meta)


def commit(
    data_dir: Path,
    new_tables: dict[str, pa.Table | StagedTable],
    variant_records: dict[str, dict[str, Any]] | None = None,
) -> None:
    """Put ``new_tables`` in place together and record them (and ``variant_records``) in the
    manifest. The caller holds :func:`data_lock`.

    Order: temporary files written and flushed; journal written (the commit point); renames;
    manifest; journal removed. :func:`recover` finishes a commit killed after the commit point.
    """
    data_dir = Path(data_dir)
    new_manifest = manifest.read(data_dir)
    new_manifest.update(package_version=__version__, code_hash=manifest.code_hash())
    _forget_changed(data_dir, new_manifest, new_tables)
    renames: list[tuple[str, str]] = []
    try:
        for name, table in new_tables.items():
            final = table_path(data_dir, name)
            final.parent.mkdir(parents=True, exist_ok=True)  # a variant's own folder
            tmp = _tmp_name(final)
            renames.append((_relative(tmp, data_dir), _relative(final, data_dir)))
            new_manifest["tables"][name] = {
                "file": _relative(final, data_dir),
                **_staged_entry(name, table, tmp),
            }
        _keep_complete_variants(new_manifest, variant_records or {})
        journal = {"renames": renames, "manifest": new_manifest}
        write_bytes_atomic(data_dir / JOURNAL_NAME, json.dumps(journal).encode())
    except OSError as exc:
        _drop_staged(data_dir, new_tables, renames)
        raise PipelineError(f"cannot write tables in {data_dir}: {exc.strerror or exc}") from None
    except BaseException:
        _drop_staged(data_dir, new_tables, renames)
        raise
    recover(data_dir)


def _forget_changed(
    data_dir: Path, new_manifest: dict[str, Any], new_tables: Mapping[str, object]
) -> None:
    """Drop the variant records of tables changed behind our back: the rows kept from them can
    no longer vouch for a skip."""
    for name in new_tables:
        entry, path = new_manifest["tables"].get(name), table_path(data_dir, name)
        if entry and path.is_file() and manifest.file_sha256(path) != entry.get("sha256"):
            for variant in entry.get("variants", {}):
                new_manifest["variants"].pop(variant, None)


def _staged_entry(name: str, table: pa.Table | StagedTable, tmp: Path) -> dict[str, Any]:
    """Write ``table`` to ``tmp`` (a StagedTable is there already) and describe it for the
    manifest: rows, sha256 of the file and of its content, rows per variant."""
    import pyarrow.parquet as pq

    if isinstance(table, StagedTable):
        if name in manifest.TIMING_COLUMNS or table.path != tmp:
            raise ValueError(f"{name}: a staged table must be keyless, at {tmp}")
        digest = manifest.file_sha256(tmp)
        return {
            "rows": table.num_rows,
            "sha256": digest,
            "content_sha256": digest,
            "variants": dict(sorted(table.variants.items())),
        }
    _write_synced(tmp, lambda fh: pq.write_table(table, fh, **WRITE_OPTIONS))
    digest = manifest.file_sha256(tmp)
    variants = pl.from_arrow(table.select(["variant"]))
    assert isinstance(variants, pl.DataFrame)
    counts = variants.group_by("variant").len().sort("variant").rows()
    return {
        "rows": table.num_rows,
        "sha256": digest,
        "content_sha256": (
            manifest.content_sha256(name, table)
            if name in manifest.TIMING_COLUMNS
            else digest  # the file is that very encoding
        ),
        "variants": dict(counts),
    }


def _keep_complete_variants(new_manifest: dict[str, Any], records: dict[str, Any]) -> None:
    """Add ``records``; drop any variant whose rows a table no longer holds (not fully built)."""
    variants_now = new_manifest["variants"]
    variants_now.update(records)
    for variant in list(variants_now):
        held = {
            logical_name(t) for t, e in new_manifest["tables"].items() if variant in e["variants"]
        }
        if not set(variants_now[variant].get("tables", {})) <= held:
            del variants_now[variant]


def _relative(path: Path, data_dir: Path) -> str:
    """``path`` below ``data_dir``, as the journal and the manifest write it."""
    return path.relative_to(data_dir).as_posix()


def _drop_staged(
    data_dir: Path, new_tables: dict[str, Any], renames: list[tuple[str, str]]
) -> None:
    """Remove the temporary files of a commit that failed before its journal."""
    for tmp_name, _ in renames:
        (data_dir / tmp_name).unlink(missing_ok=True)
    for table in new_tables.values():
        if isinstance(table, StagedTable):
            table.path.unlink(missing_ok=True)


def _large_merge(path: Path, frames: Mapping[str, pl.DataFrame | ChunkedRows]) -> bool:
    """Whether a merge into ``path`` is big enough to be written slice by slice."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if any(isinstance(f, ChunkedRows) or f.height > STREAM_ROWS for f in frames.values()):
        return True
    if not path.exists():
        return False
    try:
        return pq.ParquetFile(path).metadata.num_rows > STREAM_ROWS
    except (pa.ArrowException, OSError):
        return False  # the ordinary path reports the unreadable file


def _slices(frame: pl.DataFrame | ChunkedRows) -> Iterator[pl.DataFrame]:
    """A variant's new rows in slices of at most :data:`SLICE_ROWS` rows."""
    pieces = frame.chunks() if isinstance(frame, ChunkedRows) else iter([frame])
    for piece in pieces:
        for start in range(0, piece.height, SLICE_ROWS):
            yield piece.slice(start, SLICE_ROWS)


def _stream_merged(
    path: Path,
    frames: Mapping[str, pl.DataFrame | ChunkedRows],
    rules: dict[str, dict[str, Any]],
) -> StagedTable:
    """:func:`merged_rows` for large tables: the old file read and the merge written in slices.

    The tables are kept sorted by variant (every write sorts), so one pass over the old file,
    with each new variant's rows inserted before the first old row of a later variant, gives the
    same rows in the same order as the in-memory merge.
    """
    import pyarrow.parquet as pq

    old, all_rules, empties = _old_table(path, frames)
    for variant in frames:
        all_rules.pop(variant, None)
    all_rules.update({v: r for v, r in rules.items() if v in frames})
    target = _target_frame(path, empties, frames)
    arrow_schema = target.to_arrow().schema
    meta = dict(arrow_schema.metadata or {})
    meta[RULES_KEY] = json.dumps(dict(sorted(all_rules.items())), sort_keys=True).encode()
    meta[VERSION_KEY] = __version__.encode()
    arrow_schema = arrow_schema.with_metadata(meta)
    path.parent.mkdir(parents=True, exist_ok=True)  # a variant's own folder
    tmp = _tmp_name(path)
    try:
        with open(tmp, "wb") as fh:
            with pq.ParquetWriter(fh, arrow_schema, **WRITE_OPTIONS) as writer:
                sliced = _SlicedWriter(path, writer, target, arrow_schema)
                sliced.merge(old, frames)
            fh.flush()
            os.fsync(fh.fileno())
    except pl.exceptions.PolarsError as exc:
        tmp.unlink(missing_ok=True)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TableError(f"{path}: the new rows do not fit the table's columns ({first})") from None
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise PipelineError(f"cannot write {tmp}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    counts = sliced.counts
    return StagedTable(tmp, sum(counts.values()), dict(sorted(counts.items())))


def _old_table(
    path: Path, frames: Mapping[str, Any]
) -> tuple[Any, dict[str, Any], list[pl.DataFrame]]:
    """The old file (a ParquetFile, or None), its rule sets, and the empty frames whose columns
    the merge takes: the table's one schema first, then the old file's columns if rows stay."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    canonical = schema.empty_frame(logical_name(path.stem))
    empties: list[pl.DataFrame] = [] if canonical is None else [canonical]
    if not path.exists():
        return None, {}, empties
    try:
        old = pq.ParquetFile(path)
        if "variant" not in old.schema_arrow.names:
            raise TableError(
                f"{path} is not one of our tables (no variant column); {manifest.REBUILD}"
            )
        all_rules = json.loads((old.schema_arrow.metadata or {}).get(RULES_KEY, b"{}"))
        if not all_rules or set(all_rules) - set(frames):  # kept rows: their columns first
            empty_old = pl.from_arrow(old.schema_arrow.empty_table())
            assert isinstance(empty_old, pl.DataFrame)
            empties.append(empty_old)
    except (pa.ArrowException, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TableError(
            f"{path} is not a readable Parquet table ({first}); {manifest.REBUILD}"
        ) from None
    return old, all_rules, empties


def _target_frame(
    path: Path, empties: list[pl.DataFrame], frames: Mapping[str, pl.DataFrame | ChunkedRows]
) -> pl.DataFrame:
    """An empty frame with the merged table's columns (old, new and the one schema's)."""
    for frame in frames.values():
        empty = pl.DataFrame(schema=frame.schema)
        empties.append(
            empty.select(pl.lit("", dtype=pl.String).alias("variant"), pl.exclude("variant"))
        )
    try:
        return pl.concat(empties, how="diagonal_relaxed").clear()
    except pl.exceptions.PolarsError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TableError(f"{path}: the new rows do not fit the table's columns ({first})") from None


class _SlicedWriter:
    """Writes merged rows in row groups of exactly SLICE_ROWS rows, each one contiguous chunk
    (as write_table makes them), counting rows per variant and checking the variant order."""

    def __init__(self, path: Path, writer: Any, target: pl.DataFrame, arrow_schema: Any) -> None:
        self.path, self.writer, self.target, self.arrow_schema = path, writer, target, arrow_schema
        self.counts: dict[str, int] = {}
        self.last = ""
        self.buffer: list[Any] = []

    def merge(self, old: Any, frames: Mapping[str, pl.DataFrame | ChunkedRows]) -> None:
        """One pass over the old file, each new variant inserted where its name sorts."""
        new = sorted(frames)
        batches = old.iter_batches(batch_size=SLICE_ROWS) if old is not None else []
        for batch in batches:
            rows = pl.from_arrow(batch)
            assert isinstance(rows, pl.DataFrame)
            rows = rows.filter(~pl.col("variant").is_in(list(frames)))
            while new and rows.height:
                before = int((rows["variant"] < new[0]).sum())
                if before == rows.height:
                    break
                self.put(rows.head(before))
                rows = rows.slice(before)
                self.put_new(frames, new.pop(0))
            self.put(rows)
        for variant in new:
            self.put_new(frames, variant)
        self.flush(final=True)

    def flush(self, final: bool = False) -> None:
        """Write the full row groups gathered so far (all that is left when ``final``)."""
        import pyarrow as pa

        size = sum(t.num_rows for t in self.buffer)
        if size < SLICE_ROWS and not (final and size):
            return
        whole = pa.concat_tables(self.buffer)
        full = size if final else size - size % SLICE_ROWS
        for start in range(0, full, SLICE_ROWS):
            group = whole.slice(start, min(SLICE_ROWS, full - start)).combine_chunks()
            self.writer.write_table(group, row_group_size=SLICE_ROWS)
        self.buffer[:] = [whole.slice(full)] if full < size else []

    def put(self, rows: pl.DataFrame) -> None:
        """Add rows (sorted by variant, after every row put before)."""
        if not rows.height:
            return
        rows = pl.concat([self.target, rows], how="diagonal_relaxed")
        first, final = rows["variant"][0], rows["variant"][-1]
        if first < self.last:
            raise TableError(f"{self.path} is not sorted by variant; {manifest.REBUILD}")
        self.last = final
        for variant, n in rows.group_by("variant").len().rows():
            self.counts[variant] = self.counts.get(variant, 0) + n
        self.buffer.append(rows.to_arrow().cast(self.arrow_schema))
        self.flush()

    def put_new(self, frames: Mapping[str, pl.DataFrame | ChunkedRows], variant: str) -> None:
        """Add a new variant's rows, a slice at a time."""
        for piece in _slices(frames[variant]):
            self.put(piece.select(pl.lit(variant).alias("variant"), pl.exclude("variant")))


#: Parquet writer settings (fixed, so that equal tables are equal bytes).
WRITE_OPTIONS: dict[str, Any] = manifest.PARQUET_OPTIONS


def _kept_rows(
    path: Path, name: str, old: pl.DataFrame, frames: dict[str, pl.DataFrame]
) -> pl.DataFrame:
    """The old rows a write of ``frames`` keeps: other variants, or (keyed tables) other keys."""
    keys = ROW_KEYS.get(name)
    if keys is None:
        return old.filter(~pl.col("variant").is_in(list(frames)))
    missing = [k for k in keys if k not in old.columns]
    if missing:
        raise TableError(f"{path} lacks key columns {missing}; {manifest.REBUILD}")
    new_keys = pl.concat(
        [
            f.select(pl.lit(v).alias("variant"), *[pl.col(k) for k in keys if k != "variant"])
            for v, f in frames.items()
        ],
        how="vertical_relaxed",
    )
    new_keys = new_keys.cast({k: old.schema[k] for k in keys})
    return old.join(new_keys.unique(), on=list(keys), how="anti")


def write_atomic(path: Path, table: pa.Table) -> None:
    """Write one Parquet table atomically (see :func:`write_file_atomic`)."""
    import pyarrow.parquet as pq

    write_file_atomic(path, lambda fh: pq.write_table(table, fh, **WRITE_OPTIONS))
