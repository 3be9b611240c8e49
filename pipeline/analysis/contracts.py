"""Checking built tables against the data contracts in `queries/contracts/`.

Each contract is a SQL file (see :mod:`pipeline.analysis.sql` for the header convention) that
returns the rows breaking it, so a contract holds when its query returns no rows. Besides the SQL
contracts,
`manifest` checks that every table file is the one ``manifest.json`` records (same sha256), which
is how a reader tells a consistent set of tables from a mix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from pipeline.analysis import sql
from pipeline.errors import TableError
from pipeline.store import manifest, tables

CONTRACTS_DIR = sql.QUERIES_DIR / "contracts"
#: Tables a contract may need; one that is not built makes the contract "skipped", not failed.
OPTIONAL_TABLES = ("edges", "policy", "moves")
#: The columns every game's tables share, which the contracts read.
REQUIRED_COLUMNS = {
    "states": ("variant", "state_id", "value", "maximise", "terminal", "objective"),
    "edges": (
        "variant",
        "state_id",
        "dice",
        "roll",
        "prob",
        "move",
        "next_state_id",
        "reward",
        "sign",
    ),
    "policy": ("variant", "state_id", "roll", "best_move", "value", "n_optimal", "n_moves"),
    "moves": ("variant", "state_id", "roll", "move", "value", "regret", "is_best"),
}


@dataclass(frozen=True)
class ContractResult:
    """The outcome of one contract: the offending rows (none when it holds), or why skipped."""

    name: str
    description: str
    violations: pl.DataFrame
    skipped: str = ""

    @property
    def label(self) -> str:
        """How the contract is named to people: its SQL file's ``-- name:``, or manifest.json."""
        return "manifest.json" if self.name == "manifest" else f"contracts/{self.name}"

    @property
    def ok(self) -> bool:
        """Whether the contract holds (or could not apply)."""
        return self.violations.height == 0


def contract_names() -> list[str]:
    """Names of the SQL contracts, e.g. ``bellman`` for queries/contracts/bellman.sql."""
    return sorted(p.stem for p in CONTRACTS_DIR.glob("*.sql"))


def verify(data_dir: Path, variant: str | None = None) -> list[ContractResult]:
    """Run every contract on the tables of ``data_dir`` (only ``variant``'s rows when given).

    TablesMissingError when there is no states table, or it has no rows of ``variant``;
    TableError when a table is not readable Parquet.
    """
    data_dir = Path(data_dir)
    tables.settle(data_dir)
    for name, columns in REQUIRED_COLUMNS.items():
        found = tables.read_arrow(data_dir, name)  # TableError when present but unreadable
        lacking = [c for c in columns if found is not None and c not in found.column_names]
        if lacking:
            path = tables.table_path(data_dir, name)
            raise TableError(f"{path} is not one of our tables (no column {', '.join(lacking)})")
    tables.read_table(data_dir, "states", variant)  # raises unless built, with the variant
    results = [_manifest_result(data_dir)]
    results += [_run_contract(name, data_dir, variant) for name in contract_names()]
    return results


def _run_contract(name: str, data_dir: Path, variant: str | None) -> ContractResult:
    """Run one SQL contract; a contract that reads a table not built is skipped."""
    path = CONTRACTS_DIR / f"{name}.sql"
    description = sql.header(path).get("description", "")
    missing = [t for t in OPTIONAL_TABLES if not tables.table_path(data_dir, t).exists()]
    needs = sql.header(path).get("inputs", "")
    absent = [t for t in missing if t in needs.replace(",", " ").split()]
    if absent:
        return ContractResult(name, description, pl.DataFrame(), f"{', '.join(absent)} not built")
    con = sql.connect(data_dir, {"variant": variant})
    con.execute("set enable_progress_bar = false")  # DuckDB's bar would clutter stderr
    try:
        found = con.sql(path.read_text()).pl()
    except duckdb.Error as exc:
        first = str(exc).splitlines()[0]
        found = pl.DataFrame({"problem": [f"the contract could not run: {first}"]})
    finally:
        con.close()
    return ContractResult(name, description, found)


def _manifest_result(data_dir: Path) -> ContractResult:
    """Whether the table files are the ones manifest.json records."""
    description = "Every table file is the one manifest.json records (same sha256)."
    if not manifest.manifest_path(data_dir).exists():
        return ContractResult("manifest", description, pl.DataFrame(), "no manifest.json")
    problems = manifest.mismatches(data_dir)
    return ContractResult("manifest", description, pl.DataFrame({"problem": problems}))


def first_rows(result: ContractResult, n: int = 5) -> pl.DataFrame:
    """The first ``n`` offending rows of a contract, for display."""
    if "problem" in result.violations.columns:
        return result.violations.select("problem", pl.exclude("problem")).head(n)
    return result.violations.head(n)
