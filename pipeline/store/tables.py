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
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline._version import __version__
from pipeline.errors import PipelineError, TableError, first_line
from pipeline.store import directory, footers, manifest, schema
from pipeline.store.files import _tmp_name, _write_synced, write_bytes_atomic
from pipeline.store.layout import (  # noqa: F401  (part of this module's interface)
    JOURNAL_NAME,
    data_lock,
    ensure_writable,
    logical_name,
    recover,
    settle,
    table_files,
    table_path,
    variant_file,
)
from pipeline.store.listing import no_rows, not_built
from pipeline.store.merging import (  # noqa: F401  (part of this module's interface)
    COLUMNS_KEY,
    RULES_KEY,
    SLICE_ROWS,
    STREAM_ROWS,
    WRITE_OPTIONS,
    ChunkedRows,
    StagedTable,
    TableMerge,
    unfit,
)

if TYPE_CHECKING:  # pyarrow loads when a table is written or hashed, not to read one; polars
    import polars as pl  # to read or merge rows, not for a streamed build's commit
    import pyarrow as pa

#: Tables whose rows are replaced by key instead of by whole variant: name -> key columns. A
#: write then replaces only the old rows whose key the new rows share (e.g. `build` rewrites the
#: exact benchmark rows of a variant and keeps its simulation rows).
ROW_KEYS: dict[str, tuple[str, ...]] = {"benchmarks": ("variant", "strategy", "method")}


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
        raise TableError(
            f"{path} is not a readable Parquet table ({first_line(exc)}); {manifest.REBUILD}"
        ) from None


def declared_columns(path: Path) -> list[str] | None:
    """The columns a lean file says it holds (:data:`COLUMNS_KEY`), or None for a file with
    every column of its table."""
    return _footer(path).declared


def file_columns(path: Path) -> list[str]:
    """The column names of one table file, from its footer; TableError when unreadable."""
    return list(_footer(path).columns)


def _footer(path: Path) -> footers.Footer:
    """The file's footer (:func:`pipeline.store.footers.footer`); TableError when it is gone
    too."""
    try:
        return footers.footer(path)
    except OSError as exc:
        raise TableError(
            f"{path} is not a readable Parquet table ({exc.strerror or exc}); {manifest.REBUILD}"
        ) from None


def read_table(
    data_dir: Path, name: str, variant: str | None = None, sweep: bool = True
) -> pl.DataFrame:
    """Table ``name`` as a polars DataFrame, only ``variant``'s rows when given.

    Reads the shared file and the variants' own files (``variants/<variant>/<name>.parquet``).
    TablesMissingError when the table (or the variant in it) has not been built. ``sweep``:
    remove killed builds' temporary files first (see :func:`settle`).
    """
    import polars as pl

    settle(data_dir, sweep)
    files = [variant_file(data_dir, name, variant)] if variant else table_files(data_dir, name)
    files = [f for f in files if f.exists()]
    if not files:
        raise not_built(table_path(data_dir, name), variant or "all")
    frames = [_read_file(path, variant) for path in files]
    frame = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    frame = frame.with_columns(schema.derived_polars(name, frame.columns))
    if variant is not None and frame.height == 0:
        raise no_rows(files[0], variant)
    return frame


def _read_file(path: Path, variant: str | None) -> pl.DataFrame:
    """One table file's rows (only ``variant``'s when given); TableError when unreadable."""
    import polars as pl

    if "variant" not in file_columns(path):
        raise manifest.not_ours(path)
    try:
        lazy = pl.scan_parquet(path)
        if variant is not None:
            lazy = lazy.filter(pl.col("variant") == variant)
        return lazy.collect()
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise TableError(
            f"{path} is not a readable table ({first_line(exc)}); {manifest.REBUILD}"
        ) from None


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

    A table without row keys is written slice by slice straight to its temporary file
    (:class:`~pipeline.store.merging.TableMerge`) and comes back as a :class:`StagedTable`; a
    keyed table (small) comes back whole, as Arrow.

    The caller holds :func:`data_lock`, so that nobody changes the table before it is committed.
    """
    import polars as pl

    path = table_path(data_dir, name)
    if name not in ROW_KEYS:
        with TableMerge(path, [f.schema for f in frames.values()]) as merge:
            for variant in sorted(frames):
                merge.add(variant, frames[variant], rules.get(variant))
            return merge.finish()
    small = {v: f for v, f in frames.items() if isinstance(f, pl.DataFrame)}
    old = read_arrow(data_dir, name)
    canonical = schema.empty_frame(logical_name(name))
    kept: list[pl.DataFrame] = [] if canonical is None else [canonical]
    all_rules: dict[str, Any] = {}
    if old is not None:
        if "variant" not in old.column_names:
            raise manifest.not_ours(path)
        all_rules = footers.decode_rules(old.schema.metadata, path)
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
        raise unfit(path, exc) from None
    merged = merged.sort("variant", maintain_order=True)
    table = merged.to_arrow()
    return table.replace_schema_metadata(
        {**(table.schema.metadata or {}), **footers.recorded(all_rules)}
    )


def commit(
    data_dir: Path,
    new_tables: dict[str, pa.Table | StagedTable],
    variant_records: dict[str, dict[str, Any]] | None = None,
) -> None:
    """Put ``new_tables`` in place together and record them (and ``variant_records``) in the
    manifest. The caller holds :func:`data_lock`.

    Order: temporary files written and flushed; journal written (the commit point); renames;
    manifest; the catalog (``stb.duckdb``) rewritten; journal removed. :func:`recover` finishes
    a commit killed after the commit point.
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
    directory.changed(data_dir)  # this process's readers see the new tables at once


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
        digest = content = table.sha256 or manifest.file_sha256(tmp)
        variants = dict(sorted(table.variants.items()))
    else:
        import polars as pl  # not for a staged table: a streamed build commits without polars

        _write_synced(tmp, lambda fh: pq.write_table(table, fh, **WRITE_OPTIONS))
        digest = manifest.file_sha256(tmp)
        found = pl.from_arrow(table.select(["variant"]))
        assert isinstance(found, pl.DataFrame)
        variants = dict(found.group_by("variant").len().sort("variant").rows())
        content = (
            manifest.content_sha256(name, table)
            if name in manifest.TIMING_COLUMNS
            else digest  # the file is that very encoding
        )
    return {
        "rows": table.num_rows,
        "sha256": digest,
        "content_sha256": content,
        "variants": variants,
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


def _kept_rows(
    path: Path, name: str, old: pl.DataFrame, frames: dict[str, pl.DataFrame]
) -> pl.DataFrame:
    """The old rows a write of ``frames`` keeps: other variants, or (keyed tables) other keys."""
    import polars as pl

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
    # in the old rows' order: polars promises no order of a join's rows unless asked, and the
    # same rows in another order are another file (a build must write the same bytes)
    return old.join(new_keys.unique(), on=list(keys), how="anti", maintain_order="left")
