"""`stb-pipeline export dataset`: a self-contained copy of the built tables, to hand to others.

The folder holds one Parquet file per table and variant, every file of a table with the same
columns (the catalog's views: a big box's tile columns filled in, ``kind`` filled in, columns
that do not apply null), and three files that describe them:

- ``README.md``, the dataset card: a YAML header that the Hugging Face ``datasets`` library
  reads (one config per table and variant, ``<table>-<variant>``, and one per table with every
  variant), how to load it, what every column means (:mod:`pipeline.analysis.schema_docs`, the
  source of data/README.md; the types from :mod:`pipeline.store.schema`), each variant's rules
  and the published figures its tables reproduce, and every file's sha256;
- ``dataset.json``, the same for programs (format :data:`pipeline.store.sources.DATASET_FORMAT`);
- ``SHA256SUMS``, the sha256 of every other file (``sha256sum -c SHA256SUMS`` checks them).

It is written into a temporary folder beside the target and renamed into place, so a reader
sees the old copy or the new one. The card is :mod:`pipeline.analysis.dataset_card`'s; `verify`
checks such a folder with :mod:`pipeline.analysis.dataset_checks`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from pipeline._version import __version__
from pipeline.analysis import schema_docs, sql
from pipeline.analysis.dataset_card import render_card
from pipeline.analysis.dataset_checks import start_value
from pipeline.errors import PipelineError, TableError, TablesMissingError, UsageError, first_line
from pipeline.games.published import Published, published
from pipeline.games.registry import REGISTRY, variant_from_rules
from pipeline.store import manifest, sources, views
from pipeline.store.files import _fsync_dir, _pid_alive, _write_synced, why
from pipeline.store.footers import recorded
from pipeline.store.layout import settle
from pipeline.store.outputs import check_output_folder, refuse_data_files, resolved

CARD, INDEX, SUMS = sources.DATASET_CARD, sources.DATASET_INDEX, sources.DATASET_SUMS


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote."""

    path: Path
    files: int
    rows: int
    bytes: int
    variants: int
    seconds: float


@dataclass(frozen=True)
class _File:
    """One exported table file."""

    table: str
    variant: str
    path: str
    rows: int
    sha256: str


def export_dataset(
    data_dir: Path, out: Path, variants: list[str] | None = None, force: bool = False
) -> ExportReport:
    """Write the tables of ``data_dir`` (only ``variants``' rows when given) into ``out`` as a
    dataset (see the module docstring); ``out`` may be a dataset of ours or an empty or absent
    folder, another folder only with ``force``. UsageError for a bad target or an unknown
    variant, TablesMissingError when nothing is built, PipelineError when a file cannot be
    written or the tables changed meanwhile (then nothing is left behind)."""
    t0 = time.perf_counter()
    data_dir, out = Path(data_dir), Path(out)
    check_target(data_dir, out, force)
    settle(data_dir)
    before = _manifest_bytes(data_dir)
    found = sources.data_files(data_dir)
    if not found.get("states"):
        raise TablesMissingError(f"no tables in {data_dir}: run `stb-pipeline build` first")
    con = sql.connect(data_dir)
    try:
        return _export(con, data_dir, out, found, variants, before, t0)
    except duckdb.Error as exc:
        raise sql.damaged(data_dir, exc) from None
    finally:
        con.close()


def _export(
    con: Any,
    data_dir: Path,
    out: Path,
    found: dict[str, list[sources.TableFile]],
    variants: list[str] | None,
    before: bytes | None,
    t0: float,
) -> ExportReport:
    """:func:`export_dataset` once the tables are open (``before``: the manifest's bytes)."""
    counts = _rows_by_variant(con, list(found))
    chosen = _chosen(counts, variants, data_dir)
    rules = sources.rules_of(data_dir, [f for fs in found.values() for f in fs])
    tmp = _temporary(out)
    try:
        written = _write_tables(con, tmp, counts, chosen, rules)
        columns = {t: _columns(con, t) for t in sorted({f.table for f in written})}
        figures = {v: _figures(con, v) for v in chosen}
        index = _index(data_dir, written, columns, chosen, rules, figures)
        _write_text(tmp / INDEX, json.dumps(index, indent=2, sort_keys=True) + "\n")
        _write_text(tmp / CARD, render_card(index))
        _write_sums(tmp)
        if _manifest_bytes(data_dir) != before:
            raise PipelineError(
                f"the tables in {data_dir} changed while they were exported; export again"
            )
        _put_in_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return ExportReport(
        out,
        len(written),
        sum(f.rows for f in written),
        size,
        len(chosen),
        time.perf_counter() - t0,
    )


def check_target(data_dir: Path, out: Path, force: bool) -> None:
    """UsageError unless ``out`` may receive a dataset: absent, empty, a dataset of ours, or
    (``force``) another folder; never a file, the data directory, a folder holding it or the
    folder of its variants' own files (a folder of its own inside it, like data/report, is
    fine: no reader of the tables looks there)."""
    target, data = resolved(out), resolved(data_dir, "--data-dir")
    if target == data or target in data.parents:
        raise UsageError(f"{out} holds the data directory {data_dir}: choose another folder")
    own = data / sources.OWN_DIR
    if target == own or own in target.parents:
        raise UsageError(f"{out} is where {data_dir} keeps its tables: choose another folder")
    refuse_data_files(out, data_dir, "-o")  # data/x.parquet would be read as a table
    check_output_folder(out, "-o")
    if out.is_dir() and any(out.iterdir()) and not sources.is_dataset(out) and not force:
        raise UsageError(
            f"{out} is not empty and holds no dataset of ours: choose another folder, or "
            "--force to replace it"
        )


def _manifest_bytes(data_dir: Path) -> bytes | None:
    """The manifest's bytes (None without one): what tells that a build committed meanwhile."""
    path = manifest.manifest_path(data_dir)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TableError(f"cannot read {path}: {why(path, exc)}") from None


def _rows_by_variant(con: Any, tables: list[str]) -> dict[str, dict[str, int]]:
    """Rows of each table by variant (tables read through the views)."""
    out: dict[str, dict[str, int]] = {}
    for table in tables:
        query = f"select variant, count(*) from {views.ident(table)} group by all order by 1"
        out[table] = {str(v): int(n) for v, n in con.execute(query).fetchall() if v is not None}
    return out


def _chosen(
    counts: dict[str, dict[str, int]], wanted: list[str] | None, data_dir: Path
) -> list[str]:
    """The variants to export: ``wanted``, or every variant with states."""
    built = sorted(counts.get("states", {}))
    if not wanted or "all" in wanted:
        return built
    unknown = [v for v in wanted if v not in built]
    if unknown:
        raise UsageError(
            f"variant {unknown[0]!r} is not built in {data_dir}; built: {', '.join(built)}"
        )
    return sorted(set(wanted))


def _temporary(out: Path) -> Path:
    """A new temporary folder beside ``out`` (those of exports that died are removed)."""
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        for stale in parent.glob(f".{out.name}.*.tmp"):
            pid = stale.name.rsplit(".", 2)[-2]
            if pid.isdigit() and not _pid_alive(int(pid)):
                shutil.rmtree(stale, ignore_errors=True)
        tmp = parent / f".{out.name}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
    except OSError as exc:
        raise PipelineError(f"cannot write {out}: {why(parent, exc)}") from None
    return tmp


def _write_tables(
    con: Any,
    tmp: Path,
    counts: dict[str, dict[str, int]],
    chosen: list[str],
    rules: dict[str, Any],
) -> list[_File]:
    """One Parquet file per table and variant, through the views; what was written."""
    from pipeline import progress

    jobs = [(t, v) for t in sorted(counts) for v in chosen if counts[t].get(v)]
    written = []
    with progress.task("exporting tables", total=len(jobs), unit="files") as job:
        for table, variant in jobs:
            relative = f"{table}/{variant}.parquet"
            path = tmp / relative
            path.parent.mkdir(exist_ok=True)
            meta = {
                k.decode(): v.decode()
                for k, v in recorded({variant: rules.get(variant, {})}).items()
            }
            kv = ", ".join(f"{views.literal(k)}: {views.literal(v)}" for k, v in meta.items())
            con.execute("set variable export_variant = $v", {"v": variant})
            try:
                con.execute(
                    f"copy (select * from {views.ident(table)} "
                    "where variant = getvariable('export_variant')) "
                    f"to {views.literal(str(path))} "
                    f"(format parquet, compression zstd, kv_metadata {{{kv}}})"
                )
            except duckdb.Error as exc:  # a full disk, a file gone
                raise PipelineError(f"cannot write {relative}: {first_line(exc)[:200]}") from None
            written.append(
                _File(table, variant, relative, counts[table][variant], manifest.file_sha256(path))
            )
            job.advance()
    return written


def _columns(con: Any, table: str) -> list[dict[str, str]]:
    """The columns of a table's view: name, DuckDB type and meaning (schema_docs)."""
    meanings = schema_docs.TABLES.get(table, ("", {}))[1]
    rows = con.execute(f"describe {views.ident(table)}").fetchall()
    return [{"name": r[0], "type": r[1], "meaning": meanings.get(r[0], "")} for r in rows]


def _figures(con: Any, variant: str) -> list[dict[str, Any]]:
    """The published figures of ``variant`` with the tables' own (from its start state)."""
    found = published(variant)
    if not found:
        return []
    start = start_value(con, REGISTRY[variant])
    return [_figure(p, start) for p in found]


def _figure(p: Published, start: float | None) -> dict[str, Any]:
    """One published figure, the tables' figure and whether they agree."""
    ours = None if start is None else p.ours(start)
    return {
        "what": p.what,
        "published": p.written,
        "value": p.value,
        "tolerance": p.tolerance,
        "source": p.source,
        "ours": ours,
        "agrees": start is not None and p.agrees(start),
    }


def _index(
    data_dir: Path,
    written: list[_File],
    columns: dict[str, list[dict[str, str]]],
    chosen: list[str],
    rules: dict[str, Any],
    figures: dict[str, list[dict[str, Any]]],
) -> dict[str, Any]:
    """dataset.json: what wrote the dataset, its tables (columns, files) and variants."""
    records = manifest.read(data_dir).get("variants", {})
    tables: dict[str, Any] = {}
    for table, cols in columns.items():
        grain = schema_docs.TABLES.get(table, ("", {}))[0]
        files = {
            f.variant: {"path": f.path, "rows": f.rows, "sha256": f.sha256}
            for f in written
            if f.table == table
        }
        tables[table] = {"grain": grain, "columns": cols, "files": files}
    variant_info = {}
    for name in chosen:
        record = records.get(name, {})
        variant_info[name] = {
            "description": _description(name, rules.get(name, {})),
            "rules": rules.get(name, {}),
            "built_by": {
                "package_version": record.get("package_version"),
                "code_hash": record.get("code_hash"),
            },
            "published": figures.get(name, []),
        }
    return {
        "format": sources.DATASET_FORMAT,
        "written_by": {
            "package": "stb-pipeline",
            "package_version": __version__,
            "code_hash": manifest.code_hash(),
        },
        "tables": tables,
        "variants": variant_info,
    }


def _description(name: str, rules: dict[str, Any]) -> str:
    """A variant's one-line description: the registry's, or its custom rules' in words."""
    if name in REGISTRY:
        return REGISTRY[name].description
    custom = variant_from_rules(name, rules)
    return custom.description if custom is not None else "a custom rule set"


def _write_text(path: Path, text: str) -> None:
    """Write a text file of the dataset (flushed to disk)."""
    try:
        _write_synced(path, lambda fh: fh.write(text.encode("utf-8")))
    except OSError as exc:
        raise PipelineError(f"cannot write {path.name}: {why(path, exc)}") from None


def _write_sums(tmp: Path) -> None:
    """SHA256SUMS: ``sha256  path`` of every other file, as ``sha256sum -c`` reads them."""
    lines = [
        f"{manifest.file_sha256(p)}  {p.relative_to(tmp).as_posix()}"
        for p in sorted(tmp.rglob("*"))
        if p.is_file() and p.name != SUMS
    ]
    _write_text(tmp / SUMS, "\n".join(lines) + "\n")
    for folder in [tmp, *(p for p in tmp.iterdir() if p.is_dir())]:
        for p in folder.iterdir():
            if p.is_file():
                with open(p, "rb") as fh:
                    os.fsync(fh.fileno())
        _fsync_dir(folder)


def _put_in_place(tmp: Path, out: Path) -> None:
    """Rename the finished folder to ``out``, the old one (if any) moved aside then removed."""
    aside = out.parent / f".{out.name}.old.{os.getpid()}.tmp"
    try:
        if out.exists():
            os.replace(out, aside)
        os.replace(tmp, out)
    except OSError as exc:
        if aside.exists() and not out.exists():
            with contextlib.suppress(OSError):
                os.replace(aside, out)
        raise PipelineError(f"cannot write {out}: {why(out, exc)}") from None
    shutil.rmtree(aside, ignore_errors=True)
    _fsync_dir(out.parent)
