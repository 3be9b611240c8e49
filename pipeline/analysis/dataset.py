"""`stb-pipeline export dataset`: a self-contained copy of the built tables, to hand to others.

The folder holds one Parquet file per table and variant, every file of a table with the same
columns (the catalog's views: a big box's tile columns filled in, ``kind`` filled in, columns
that do not apply null), and three files that describe them:

- ``README.md``, the dataset card: a YAML header that the Hugging Face ``datasets`` library
  reads (one config per table and variant, ``<table>-<variant>``, and one per table with every
  variant), how to load it, what every column means (:mod:`pipeline.analysis.schema_docs`, the
  source of data/README.md; the types from :mod:`pipeline.store.schema`), each variant's rules
  and the published figures its tables reproduce, and every file's sha256;
- ``dataset.json``, the same for programs (:data:`FORMAT`);
- ``SHA256SUMS``, the sha256 of every other file (``sha256sum -c SHA256SUMS`` checks them).

It is written into a temporary folder beside the target and renamed into place, so a reader
sees the old copy or the new one. `verify` checks such a folder (:func:`verify_dataset`): the
hashes, the index, the columns, the published figures and the data contracts.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipeline import __version__
from pipeline.analysis import contracts, schema_docs, sql
from pipeline.errors import (
    ContractError,
    PipelineError,
    TableError,
    TablesMissingError,
    UsageError,
)
from pipeline.games.published import Published, published
from pipeline.games.registry import REGISTRY, Variant, variant_from_rules
from pipeline.store import manifest, sources, views
from pipeline.store.files import _fsync_dir, _pid_alive, why
from pipeline.store.layout import settle
from pipeline.store.schema import RULES_KEY, VERSION_KEY

#: Version of the layout and of dataset.json; bumped when either changes shape.
FORMAT = 1
CARD = "README.md"
INDEX = sources.DATASET_INDEX
SUMS = "SHA256SUMS"
#: The table and variant whose config the `datasets` library loads when none is named.
DEFAULT_CONFIG = ("policy", "classic")


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
    target, data = out.resolve(), data_dir.resolve()
    if target == data or target in data.parents:
        raise UsageError(f"{out} holds the data directory {data_dir}: choose another folder")
    own = data / sources.OWN_DIR
    if target == own or own in target.parents:
        raise UsageError(f"{out} is where {data_dir} keeps its tables: choose another folder")
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} is a file, not a folder")
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
                RULES_KEY.decode(): json.dumps({variant: rules.get(variant, {})}, sort_keys=True),
                VERSION_KEY.decode(): __version__,
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
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise PipelineError(f"cannot write {relative}: {first[:200]}") from None
            written.append(_File(table, variant, relative, counts[table][variant], _sha256(path)))
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
    start = _start_value(con, REGISTRY[variant])
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


def _start_value(con: Any, variant: Variant) -> float | None:
    """The value of the variant's start state in the states view (None when absent)."""
    row = con.execute(
        "select value from states where variant = $v and state_id = $s",
        {"v": variant.name, "s": variant.make().start_state()},
    ).fetchone()
    return None if row is None or row[0] is None else float(row[0])


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
        "format": FORMAT,
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


def _sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    return manifest.file_sha256(path)


def _write_text(path: Path, text: str) -> None:
    """Write a text file of the dataset (flushed to disk)."""
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise PipelineError(f"cannot write {path.name}: {why(path, exc)}") from None


def _write_sums(tmp: Path) -> None:
    """SHA256SUMS: ``sha256  path`` of every other file, as ``sha256sum -c`` reads them."""
    lines = [
        f"{_sha256(p)}  {p.relative_to(tmp).as_posix()}"
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


def config_name(table: str, variant: str | None) -> str:
    """The `datasets` config of one table's files of ``variant`` (None: every variant)."""
    return table if variant is None else f"{table}-{variant}"


def render_card(index: dict[str, Any]) -> str:
    """The dataset card (README.md) of ``index``."""
    return "\n".join(
        [
            *_yaml_header(index),
            *_card_intro(index),
            *_card_loading(index),
            *_card_tables(index),
            *_card_variants(index),
            *_card_files(index),
        ]
    )


def _yaml_header(index: dict[str, Any]) -> list[str]:
    """The YAML header: pretty_name and one config per table and variant (and per table)."""
    q = json.dumps  # a JSON string is a YAML string
    default = _default_config(index)
    lines = ["---", f"pretty_name: {q('Shut the Box family dice games, solved exactly')}"]
    lines += ["tags:", "- games", "- dynamic-programming", "- dice", "configs:"]
    for table, info in index["tables"].items():
        configs = [(config_name(table, None), f"{table}/*.parquet")]
        configs += [(config_name(table, v), f["path"]) for v, f in info["files"].items()]
        for name, path in configs:
            lines += [f"- config_name: {q(name)}", "  data_files:"]
            lines += ["  - split: train", f"    path: {q(path)}"]
            if name == default:
                lines.append("  default: true")
    return [*lines, "---", ""]


def _default_config(index: dict[str, Any]) -> str:
    """The config loaded when none is named: the classic box's policy when exported, else the
    first table and variant."""
    table, variant = DEFAULT_CONFIG
    if variant in index["tables"].get(table, {}).get("files", {}):
        return config_name(table, variant)
    first = next(iter(index["tables"]))
    return config_name(first, next(iter(index["tables"][first]["files"])))


def _example(index: dict[str, Any]) -> tuple[str, str, int]:
    """The table, variant and rows the loading examples use (those of the default config)."""
    name = _default_config(index)
    table, _, variant = name.partition("-")
    return table, variant, index["tables"][table]["files"][variant]["rows"]


def _card_intro(index: dict[str, Any]) -> list[str]:
    """The title and what the dataset holds."""
    writer = index["written_by"]
    rows = sum(f["rows"] for t in index["tables"].values() for f in t["files"].values())
    files = sum(len(t["files"]) for t in index["tables"].values())
    return [
        "# Shut the Box family dice games, solved exactly",
        "",
        "Exact values and optimal moves of dice games (Shut the Box and its variants, Double "
        "Shutter, Shut the Box for two to six players, Knucklebones), computed by dynamic "
        "programming over every position with stb-pipeline. Each table is a folder with one "
        "Parquet file per variant; every file of a table has the same columns, null where a "
        "column does not apply to a game.",
        "",
        f"{len(index['variants'])} variants, {len(index['tables'])} tables, {files} files, "
        f"{rows:,} rows. Written by stb-pipeline {writer['package_version']} (code hash "
        f"`{writer['code_hash'][:12]}`); `{INDEX}` says the same for programs, and `{SUMS}` "
        f"holds the sha256 of every file (`sha256sum -c {SUMS}`; `stb-pipeline verify -d "
        "FOLDER` checks the hashes, the columns, the published figures and the data "
        "contracts).",
        "",
    ]


def _card_loading(index: dict[str, Any]) -> list[str]:
    """How to load the tables, as examples that run from the dataset's folder."""
    table, variant, rows = _example(index)
    config = config_name(table, variant)
    states = sum(f["rows"] for f in index["tables"].get("states", {}).get("files", {}).values())
    lines = [
        "## Loading",
        "",
        f"From this folder. A table is `<table>/*.parquet`; the config `{table}` of the "
        f"`datasets` library is every variant's rows, `{config}` one variant's (`<table>-"
        "<variant>` for each table and variant).",
        "",
        "```bash",
        f"duckdb -c \"select * from '{table}/*.parquet' where variant = '{variant}' limit 5\"",
        "```",
        "",
        "```python",
        ">>> import polars as pl",
        f">>> frame = pl.scan_parquet({table!r} + '/*.parquet')",
        f">>> frame.filter(pl.col('variant') == {variant!r}).select(pl.len()).collect().item()",
        f"{rows}",
        ">>> import pyarrow.dataset as ds",
    ]
    if states:
        lines += [">>> ds.dataset('states', format='parquet').count_rows()", f"{states}"]
    lines += [
        ">>> import os",
        ">>> from datasets import load_dataset  # it wants the folder's path, not '.'",
        f">>> load_dataset(os.path.abspath('.'), {config!r}, split='train').num_rows",
        f"{rows}",
        "```",
        "",
    ]
    return lines


def _card_tables(index: dict[str, Any]) -> list[str]:
    """Each table: what a row is, and every column's type and meaning."""
    lines = [
        "## Tables",
        "",
        "The meanings below are those of the tables as stb-pipeline stores them. Where one says "
        "a column is null in the files of boxes of 13 tiles or more, or left to the reader, "
        "this dataset has it filled in: tiles and moves as the other boxes write them, `kind` "
        "everywhere.",
        "",
    ]
    for table, info in index["tables"].items():
        lines += [f"### {table}", "", f"One row: {info['grain'] or 'see the columns'}.", ""]
        lines += ["| column | type | meaning |", "| --- | --- | --- |"]
        lines += [
            f"| `{c['name']}` | {c['type']} | {_cell(c['meaning'])} |" for c in info["columns"]
        ]
        lines.append("")
    return lines


def _card_variants(index: dict[str, Any]) -> list[str]:
    """Each variant: its description, rules, rows per table and published figures."""
    lines = ["## Variants", ""]
    for name, info in index["variants"].items():
        held = [
            f"{t} ({files[name]['rows']:,} rows)"
            for t, files in ((t, i["files"]) for t, i in index["tables"].items())
            if name in files
        ]
        built = info["built_by"]
        lines += [f"### {name}", "", f"{_cell(info['description'])}.", ""]
        lines.append(f"Tables: {', '.join(held)}.")
        if built.get("package_version"):
            code = (built.get("code_hash") or "")[:12]
            lines.append(f"Built by stb-pipeline {built['package_version']} (code hash `{code}`).")
        lines += ["", f"Rules: `{json.dumps(info['rules'], sort_keys=True)}`", ""]
        if info["published"]:
            lines += ["| figure | published | source | these tables | agree |"]
            lines.append("| --- | --- | --- | --- | --- |")
            for f in info["published"]:
                ours = "missing" if f["ours"] is None else f"{f['ours']:.12g}"
                lines.append(
                    f"| {f['what']} | {f['published']} | {f['source']} | {ours} | "
                    f"{'yes' if f['agrees'] else 'NO'} (within {f['tolerance']:g}) |"
                )
            lines.append("")
    return lines


def _card_files(index: dict[str, Any]) -> list[str]:
    """Every table file, its rows and sha256."""
    lines = ["## Files", "", "| file | rows | sha256 |", "| --- | --- | --- |"]
    for info in index["tables"].values():
        for f in info["files"].values():
            lines.append(f"| `{f['path']}` | {f['rows']:,} | `{f['sha256']}` |")
    return [*lines, ""]


def _cell(text: str) -> str:
    """Text for a Markdown table cell (no pipes, no line breaks)."""
    return re.sub(r"\s+", " ", text.replace("|", "/")).strip()


def verify_variants(root: Path, names: list[str]) -> list[contracts.VariantCheck]:
    """:func:`verify_dataset` for each named variant alone (none, or ``all``: every row at
    once), as :func:`pipeline.analysis.contracts.verify_variants` does for a data directory."""
    targets: list[str | None] = [None] if not names or "all" in names else list(names)
    return [contracts.VariantCheck(name, verify_dataset(root, name)) for name in targets]


def verify_dataset(root: Path, variant: str | None = None) -> list[contracts.ContractResult]:
    """Check an exported dataset: every file's sha256 (SHA256SUMS), the index against the
    files (rows, sha256, columns), the published figures, then the data contracts (only
    ``variant``'s rows when given). TableError when the index is unreadable, ContractError
    when the contracts checked no row."""
    root = Path(root)
    index = _read_index(root)
    if variant is not None and variant not in index.get("variants", {}):
        known = ", ".join(index.get("variants", {})) or "none"
        raise UsageError(f"variant {variant!r} is not in the dataset {root}; it holds: {known}")
    digests = {  # each file read once, for both lists of hashes
        p.relative_to(root).as_posix(): _sha256(p) for p in sorted(root.rglob("*")) if p.is_file()
    }
    results = [
        _sums_result(root, digests),
        _index_result(root, index, digests),
        _figures_result(root, index),
    ]
    exported = set(index.get("tables", {}))  # the contracts of tables not exported are skipped
    sql_results = [
        contracts.run_contract(name, root, variant, exported) for name in contracts.contract_names()
    ]
    if sum(r.checked for r in sql_results) == 0:
        raise ContractError(f"verify checked no rows in {root} (every contract skipped)")
    return results + sql_results


def _read_index(root: Path) -> dict[str, Any]:
    """dataset.json; TableError when it is not one of ours."""
    path = root / INDEX
    try:
        index = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TableError(f"{path} is not a readable dataset index ({first})") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise TableError(f"{path} is not a dataset index of format {FORMAT}")
    return index


def _sums_result(root: Path, digests: dict[str, str]) -> contracts.ContractResult:
    """Every file is the one SHA256SUMS records (``digests``: their sha256 now, by path), and
    every file is recorded there."""
    problems: list[str] = []
    listed: dict[str, str] = {}
    try:
        for line in (root / SUMS).read_text().splitlines():
            digest, _, name = line.partition("  ")
            listed[name] = digest
    except OSError as exc:
        problems.append(f"{SUMS}: {why(root / SUMS, exc)}")
    for name, digest in sorted(listed.items()):
        if name not in digests:
            problems.append(f"{name} is listed in {SUMS} but missing")
        elif digests[name] != digest:
            problems.append(f"{name} differs from the sha256 recorded in {SUMS}")
    problems += [
        f"{name} is not listed in {SUMS}" for name in digests if name not in {*listed, SUMS}
    ]
    return _result("checksums", f"Every file is the one {SUMS} records.", problems, len(listed))


def _index_result(
    root: Path, index: dict[str, Any], digests: dict[str, str]
) -> contracts.ContractResult:
    """The index lists every table file with its rows, sha256 and columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    problems: list[str] = []
    found = sources.export_files(root)
    checked = 0
    for table, info in index.get("tables", {}).items():
        names = [c["name"] for c in info.get("columns", [])]
        for file in info.get("files", {}).values():
            checked += 1
            path = root / file["path"]
            if file["path"] not in digests:
                problems.append(f"{file['path']} is listed in {INDEX} but missing")
                continue
            try:
                meta = pq.ParquetFile(path).metadata
            except (pa.ArrowException, OSError):
                problems.append(f"{file['path']} is not a readable Parquet file")
                continue
            if meta.num_rows != file["rows"]:
                problems.append(
                    f"{file['path']}: {meta.num_rows} rows, {INDEX} says {file['rows']}"
                )
            if meta.schema.to_arrow_schema().names != names:
                problems.append(f"{file['path']}: columns other than {INDEX} lists for {table}")
            if digests[file["path"]] != file["sha256"]:
                problems.append(f"{file['path']} differs from the sha256 in {INDEX}")
    listed = {
        f["path"] for t in index.get("tables", {}).values() for f in t.get("files", {}).values()
    }
    for files in found.values():
        problems += [
            f"{f.relative} is not listed in {INDEX}" for f in files if f.relative not in listed
        ]
    return _result(
        "index", f"{INDEX} lists every table file: rows, sha256, columns.", problems, checked
    )


def _figures_result(root: Path, index: dict[str, Any]) -> contracts.ContractResult:
    """Each variant's published figures hold on the exported states."""
    problems: list[str] = []
    checked = 0
    con = sql.connect(root)
    try:
        for name in index.get("variants", {}):
            found = published(name)
            if not found:
                continue
            start = _start_value(con, REGISTRY[name]) if "states" in index["tables"] else None
            for p in found:
                checked += 1
                if start is None or not p.agrees(start):
                    ours = "no start state" if start is None else f"{p.ours(start):.12g}"
                    problems.append(f"{name}: {p.what} is {ours}, {p.source} publishes {p.written}")
    finally:
        con.close()
    return _result(
        "published",
        "Each variant's published figures hold (within their rounding).",
        problems,
        checked,
    )


#: How the dataset's own checks are named to people.
TITLES = {"checksums": SUMS, "index": INDEX, "published": "published figures"}


def _result(
    name: str, description: str, problems: list[str], checked: int
) -> contracts.ContractResult:
    """A check's result: its problems as rows."""
    frame = pl.DataFrame({"problem": problems}, schema={"problem": pl.String})
    return contracts.ContractResult(name, description, frame, checked=checked, title=TITLES[name])
