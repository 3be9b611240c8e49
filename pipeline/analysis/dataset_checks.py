"""`verify` on a dataset written by `export dataset`: its hashes, its index, its published
figures and the data contracts on its tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.analysis import contracts, sql
from pipeline.errors import ContractError, PipelineError, TableError, UsageError, first_line
from pipeline.games.published import published
from pipeline.games.registry import REGISTRY, Variant
from pipeline.store import manifest, sources
from pipeline.store.files import why
from pipeline.store.footers import footer
from pipeline.store.sources import DATASET_INDEX as INDEX
from pipeline.store.sources import DATASET_SUMS as SUMS


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
        p.relative_to(root).as_posix(): manifest.file_sha256(p)
        for p in sorted(root.rglob("*"))
        if p.is_file()
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
        raise TableError(f"{path} is not a readable dataset index ({first_line(exc)})") from None
    if not isinstance(index, dict) or index.get("format") != sources.DATASET_FORMAT:
        raise TableError(f"{path} is not a dataset index of format {sources.DATASET_FORMAT}")
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
                read = footer(path)
            except (PipelineError, OSError):
                problems.append(f"{file['path']} is not a readable Parquet file")
                continue
            if read.rows != file["rows"]:
                problems.append(f"{file['path']}: {read.rows} rows, {INDEX} says {file['rows']}")
            if list(read.columns) != names:
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
            start = start_value(con, REGISTRY[name]) if "states" in index["tables"] else None
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
    return contracts.problem_result(name, description, problems, checked, TITLES[name])


def start_value(con: Any, variant: Variant) -> float | None:
    """The value of the variant's start state in the states view (None when absent)."""
    row = con.execute(
        "select value from states where variant = $v and state_id = $s",
        {"v": variant.name, "s": variant.make().start_state()},
    ).fetchone()
    return None if row is None or row[0] is None else float(row[0])
