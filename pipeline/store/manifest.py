"""`data/manifest.json`: what each table holds and what built it, so builds can be checked.

The manifest records, for each table file, its row count, the sha256 of its bytes (which tells
a file changed behind the manifest's back), a content hash (rows, schema and metadata without
timing columns: identical builds give identical content hashes) and its rows per variant; and for
each variant, the rule set, the package version, the *code hash*, the stages and options run, the
random seeds used and a summary of the graph. It is written by :func:`pipeline.store.tables.commit`
after every table it describes is in place.

The code hash is the sha256 of every ``pipeline/**/*.py`` source file (path and bytes, in path
order): the package version alone does not change while we develop, and any edit to the code that
computes the tables must make `build` recompute them.
"""

from __future__ import annotations

import hashlib
import io
import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline._version import __version__
from pipeline.errors import TableError, first_line

if TYPE_CHECKING:  # pyarrow loads when a table is written or hashed, not to read one
    import pyarrow as pa

MANIFEST_NAME = "manifest.json"
FORMAT = 1
#: How to repair a damaged or foreign table or manifest, said in every message about one.
REBUILD = (
    "move it away and run `stb-pipeline build --force --variant all` "
    "(and any other variants you use)"
)
PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the whole pipeline package


def not_ours(path: Path) -> TableError:
    """The one line for a file that is not one of our tables (it has no ``variant`` column)."""
    return TableError(f"{path} is not one of our tables (no variant column); {REBUILD}")


@lru_cache(maxsize=1)
def code_hash() -> str:
    """sha256 over the pipeline package's Python sources (relative path and bytes, sorted)."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


#: Columns that measure the machine (wall-clock timings), not the game, by table: left out of the
#: table's content hash, so that identical builds have identical content hashes.
TIMING_COLUMNS: dict[str, tuple[str, ...]] = {
    "benchmarks": ("seconds", "games_per_second", "ms_per_move")
}


#: How tables are written (fixed, so that equal tables are equal bytes).
PARQUET_OPTIONS: dict[str, Any] = {"compression": "zstd"}


def content_sha256(name: str, table: pa.Table) -> str:
    """sha256 of table ``name`` without its timing columns, written as Parquet like the tables
    (Parquet encodes the rows, not how Arrow happened to lay them out in memory). For a table
    without timing columns this is the sha256 of its file."""
    import pyarrow.parquet as pq

    timing = TIMING_COLUMNS.get(name, ())
    kept = table.select([c for c in table.column_names if c not in timing])
    buffer = io.BytesIO()
    pq.write_table(kept, buffer, **PARQUET_OPTIONS)
    return hashlib.sha256(buffer.getvalue()).hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_path(data_dir: Path) -> Path:
    """Where a data directory's manifest lives."""
    return Path(data_dir) / MANIFEST_NAME


def empty() -> dict[str, Any]:
    """A manifest describing no tables."""
    return {
        "format": FORMAT,
        "package_version": __version__,
        "code_hash": code_hash(),
        "tables": {},
        "variants": {},
    }


def read(data_dir: Path) -> dict[str, Any]:
    """The data directory's manifest (an empty one when there is none)."""
    path = manifest_path(data_dir)
    if not path.exists():
        return empty()
    try:
        found = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TableError(
            f"{path} is not a readable manifest ({first_line(exc)}); {REBUILD}"
        ) from None
    problem = _shape_problem(found)
    if problem:
        raise TableError(f"{path} is not a manifest of ours ({problem}); {REBUILD}")
    return found


def _shape_problem(found: Any) -> str:
    """What makes parsed JSON not a manifest of :data:`FORMAT` ("" when it is one)."""
    if not isinstance(found, dict):
        return "not a JSON object"
    if found.get("format") != FORMAT:
        return f"format is not {FORMAT}"
    for key in ("tables", "variants"):
        if not isinstance(found.get(key), dict):
            return f"no {key!r} object"
    for name, entry in found["tables"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            return f"table {name!r} has no sha256"
        if not isinstance(entry.get("variants", {}), dict):
            return f"table {name!r} has no variants object"
    for name, record in found["variants"].items():
        if not isinstance(record, dict):
            return f"variant {name!r} is not an object"
    return ""


def dumps(manifest: dict[str, Any]) -> bytes:
    """The manifest as stable, readable JSON (sorted keys, so equal manifests are equal bytes)."""
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()


def variant_record(
    rules: dict[str, Any],
    stages: list[str],
    seeds: dict[str, int],
    table_rows: dict[str, int],
    summary: dict[str, Any],
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What the manifest says about one variant after a run of ``stages`` with ``options``
    (flags that change the tables, such as ``exact``)."""
    return {
        "rules": rules,
        "package_version": __version__,
        "code_hash": code_hash(),
        "stages": list(stages),
        "options": dict(sorted((options or {}).items())),
        "seeds": dict(sorted(seeds.items())),
        "tables": dict(sorted(table_rows.items())),
        "summary": summary,
    }


def up_to_date(
    data_dir: Path,
    manifest: dict[str, Any],
    variant: str,
    rules: dict[str, Any],
    stages: list[str],
    options: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The variant's record when a run of ``stages`` would rebuild exactly what is on disk.

    True when the last run for the variant ran the same stages and options with the same rules,
    package version and code hash, and every table it wrote still holds rows of the variant and
    is the file the manifest describes (same bytes). None otherwise.
    """
    record = manifest.get("variants", {}).get(variant)
    if not record:
        return None
    same = (
        record.get("stages") == list(stages)
        and record.get("options", {}) == dict(options or {})
        and record.get("rules") == json.loads(json.dumps(rules))
        and record.get("package_version") == __version__
        and record.get("code_hash") == code_hash()
    )
    if not same:
        return None
    for name in record.get("tables", {}):
        # row counts may change through our own later writes (e.g. simulation rows added to a
        # keyed table); the bytes may not change behind the manifest's back
        entry = manifest.get("tables", {}).get(name)
        path = Path(data_dir) / f"{name}.parquet"
        if not entry or variant not in entry.get("variants", {}) or not path.is_file():
            return None
        if _cached_sha256(path, path.stat().st_mtime_ns, path.stat().st_size) != entry["sha256"]:
            return None
    return record


@lru_cache(maxsize=64)
def _cached_sha256(path: Path, mtime_ns: int, size: int) -> str:
    """file_sha256, remembered per (path, mtime, size) within one process."""
    return file_sha256(path)


def mismatches(data_dir: Path) -> list[str]:
    """Every way the tables on disk differ from the manifest (empty when they agree)."""
    data_dir = Path(data_dir)
    manifest = read(data_dir)
    if not manifest_path(data_dir).exists():
        return []
    out: list[str] = []
    listed = manifest.get("tables", {})
    for name, entry in sorted(listed.items()):
        path = data_dir / f"{name}.parquet"
        if not path.is_file():
            out.append(f"{path.name} is listed in {MANIFEST_NAME} but missing")
        elif file_sha256(path) != entry.get("sha256"):
            out.append(f"{path.name} differs from the sha256 recorded in {MANIFEST_NAME}")
    for path in sorted(data_dir.glob("*.parquet")):
        if path.stem not in listed:
            out.append(f"{path.name} is not listed in {MANIFEST_NAME}")
    return out


def changed_shared_tables(data_dir: Path) -> list[tuple[str, str, list[str]]]:
    """Shared tables (those of many variants) that are no longer the files the manifest records:
    (file name, what is wrong, the variants the manifest says it held). A build merging its rows
    into such a file would keep only what is left of the other variants' rows."""
    data_dir = Path(data_dir)
    if not manifest_path(data_dir).exists():
        return []
    out: list[tuple[str, str, list[str]]] = []
    for name, entry in sorted(read(data_dir).get("tables", {}).items()):
        if "/" in name or not isinstance(entry, dict):
            continue  # a variant's own files are rewritten whole by its build
        path = data_dir / f"{name}.parquet"
        held = sorted(entry.get("variants") or {})
        if not path.is_file():
            out.append((path.name, "is missing", held))
            continue
        stat = path.stat()
        if _cached_sha256(path, stat.st_mtime_ns, stat.st_size) != entry.get("sha256"):
            out.append(
                (path.name, "was changed since it was built (emptied, cut or replaced)", held)
            )
    return out
