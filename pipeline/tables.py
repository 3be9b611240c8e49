"""Reading and writing the Parquet tables: one file per table, rows of every variant, atomic.

Each table holds the rows of many variants. Writing a variant's rows reads the file, drops that
variant's old rows, adds the new ones and writes a temporary file that is then renamed over the
old one, all under a lock on the data directory, so readers only ever see a complete old or new
file and concurrent builds do not lose each other's rows.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from filelock import FileLock, Timeout

from pipeline import __version__
from pipeline.errors import PipelineError, TableError, TablesMissingError

RULES_KEY = b"stb.rules"
VERSION_KEY = b"stb.version"
LOCK_NAME = ".stb.lock"
LOCK_TIMEOUT_S = 600
#: Tables whose rows are replaced by key instead of by whole variant: name -> key columns. A
#: write then replaces only the old rows whose key the new rows share (e.g. `build` rewrites the
#: exact benchmark rows of a variant and keeps its simulation rows).
ROW_KEYS: dict[str, tuple[str, ...]] = {"benchmarks": ("variant", "strategy", "method")}


def table_path(data_dir: Path, name: str) -> Path:
    """Where table ``name`` lives."""
    return Path(data_dir) / f"{name}.parquet"


@contextlib.contextmanager
def data_lock(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's lock (waits for another build to finish)."""
    data_dir = Path(data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(data_dir / LOCK_NAME), timeout=LOCK_TIMEOUT_S)
        lock.acquire()
    except Timeout:
        raise PipelineError(f"another build has held {data_dir} for {LOCK_TIMEOUT_S} s") from None
    except OSError as exc:
        raise PipelineError(f"cannot use data directory {data_dir}: {exc.strerror}") from None
    try:
        yield
    finally:
        lock.release()


def read_arrow(data_dir: Path, name: str) -> pa.Table | None:
    """The whole table as Arrow, or None when it does not exist; TableError when unreadable."""
    path = table_path(data_dir, name)
    if not path.exists():
        return None
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise TableError(f"{path} is not a readable Parquet table ({exc}); rebuild it") from None


def read_table(data_dir: Path, name: str, variant: str | None = None) -> pl.DataFrame:
    """Table ``name`` as a polars DataFrame, only ``variant``'s rows when given.

    TablesMissingError when the table (or the variant in it) has not been built.
    """
    path = table_path(data_dir, name)
    if not path.exists():
        hint = variant or "all"
        raise TablesMissingError(
            f"{path} does not exist: run `stb-pipeline build --variant {hint}` "
            "(or build with the same custom rule options) first"
        )
    try:
        lazy = pl.scan_parquet(path)
        if variant is not None:
            lazy = lazy.filter(pl.col("variant") == variant)
        frame = lazy.collect()
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TableError(f"{path} is not a readable table ({first}); rebuild it") from None
    if variant is not None and frame.height == 0:
        raise TablesMissingError(
            f"{path} has no rows for variant {variant!r}: "
            f"run `stb-pipeline build --variant {variant}` "
            "(or build with the same custom rule options) first"
        )
    return frame


def table_rules(data_dir: Path, name: str) -> dict[str, Any]:
    """The rule sets recorded in a table's metadata, by variant."""
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
    The caller holds :func:`data_lock`. The new file is complete on disk before it gets its name.
    """
    path = table_path(data_dir, name)
    old = read_arrow(data_dir, name)
    kept: list[pl.DataFrame] = []
    all_rules: dict[str, Any] = {}
    if old is not None:
        if "variant" not in old.column_names:
            raise TableError(f"{path} is not one of our tables (no variant column); move it away")
        all_rules = json.loads((old.schema.metadata or {}).get(RULES_KEY, b"{}"))
        old_frame = pl.from_arrow(old)
        assert isinstance(old_frame, pl.DataFrame)
        kept.append(_kept_rows(path, name, old_frame, frames))
    for variant in frames:
        all_rules.pop(variant, None)
    all_rules.update(rules)
    pieces = [f for f in kept if f.height] + [
        f.select(pl.lit(v).alias("variant"), pl.exclude("variant")) for v, f in frames.items()
    ]
    merged = pl.concat(pieces, how="diagonal_relaxed") if pieces else pl.DataFrame()
    merged = merged.sort("variant", maintain_order=True)
    table = merged.to_arrow()
    meta = dict(table.schema.metadata or {})
    meta[RULES_KEY] = json.dumps(dict(sorted(all_rules.items())), sort_keys=True).encode()
    meta[VERSION_KEY] = __version__.encode()
    write_atomic(path, table.replace_schema_metadata(meta))
    return path


def _kept_rows(
    path: Path, name: str, old: pl.DataFrame, frames: dict[str, pl.DataFrame]
) -> pl.DataFrame:
    """The old rows a write of ``frames`` keeps: other variants, or (keyed tables) other keys."""
    keys = ROW_KEYS.get(name)
    if keys is None:
        return old.filter(~pl.col("variant").is_in(list(frames)))
    missing = [k for k in keys if k not in old.columns]
    if missing:
        raise TableError(f"{path} lacks key columns {missing}; move it away and rebuild")
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
    """Write a Parquet file under a temporary name, flush it to disk, then rename it into place."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp, compression="zstd")
        with open(tmp, "rb") as fh:
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
