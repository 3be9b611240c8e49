"""Checking built tables against the data contracts in `queries/contracts/` (`stb-pipeline verify`).

Each contract is a SQL file (see :mod:`pipeline.analysis.sql` for the header convention) that
returns the rows breaking it, so a contract holds when its query returns no rows. Besides the SQL
contracts, `manifest` checks that every table file is the one ``manifest.json`` records (same
sha256), which is how a reader tells a consistent set of tables from a mix.

A verify that checked nothing has proved nothing, so it fails (ContractError, exit 3) when a
contract file is missing or unreadable, when a table the manifest records is absent, and when no
contract checked a single row; each result counts the rows it checked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path

import duckdb
import polars as pl

from pipeline.analysis import sql
from pipeline.errors import ContractError, TableError
from pipeline.store import catalog, layout, manifest, schema, tables

CONTRACTS_DIR: Traversable = sql.QUERIES_DIR.joinpath("contracts")
#: Row groups of a lean file (the full Knucklebones game's states: 4,590 groups of 1,048,576
#: rows) the SQL contracts read, evenly spaced by state id: every row would be hours of work and
#: a grouping over billions of keys. The sampled Bellman check of those tables runs beside them.
LEAN_GROUPS = 16
#: Tables a contract may need that a build can leave out (games too large for them, or the
#: strategies stage's, which `build` runs for some boxes only); a contract reading one that is
#: neither built nor recorded in manifest.json is "skipped", not failed.
OPTIONAL_TABLES = ("edges", "policy", "moves", "strategy_search", "strategy_exceptions")
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
    """One contract's outcome: rows checked, the offending rows (none when it holds), or why
    it was skipped."""

    name: str
    description: str
    violations: pl.DataFrame
    skipped: str = ""
    checked: int = 0
    title: str = ""
    """How a check that is not a SQL file is named to people (the SQL files: their name)."""

    @property
    def label(self) -> str:
        """How the contract is named to people: its SQL file's ``-- name:``, or manifest.json."""
        own = {
            "manifest": "manifest.json",
            "schema": "one schema per table",
            "temporary": TEMPORARY_LABEL,
            "journal": JOURNAL_LABEL,
            "catalog": CATALOG_LABEL,
        }
        if self.name in own:
            return own[self.name]
        return self.title or f"contracts/{self.name}"

    @property
    def ok(self) -> bool:
        """Whether the contract holds (or could not apply)."""
        return self.violations.height == 0


@dataclass(frozen=True)
class VariantCheck:
    """The results of every contract on one variant's rows (``variant`` None: all rows)."""

    variant: str | None
    results: list[ContractResult]

    @property
    def failed(self) -> list[str]:
        """Labels of the contracts that fail, prefixed with the variant when there is one."""
        prefix = f"{self.variant}: " if self.variant else ""
        return [prefix + r.label for r in self.results if not r.ok]


def contract_names() -> list[str]:
    """Names of the SQL contracts, e.g. ``bellman`` for queries/contracts/bellman.sql.

    ContractError when the directory holds none: a verify without contracts proves nothing.
    """
    try:
        names = sorted(p.name[:-4] for p in CONTRACTS_DIR.iterdir() if p.name.endswith(".sql"))
    except OSError:
        names = []
    if not names:
        raise ContractError(
            f"no contract files in {CONTRACTS_DIR}: the installation is incomplete "
            "(reinstall stb-pipeline)"
        )
    return names


#: A check a layer above this one adds to `verify` (the Knucklebones tables' sampled Bellman
#: check): (data directory, variant or None) -> its results (none when it does not apply).
ExtraCheck = Callable[[Path, "str | None"], list[ContractResult]]


def verify_variants(
    data_dir: Path, names: list[str], fix: bool = False, extra: Sequence[ExtraCheck] = ()
) -> list[VariantCheck]:
    """Run every contract for each named variant alone (none, or ``all``: every row at once);
    ``fix`` removes the temporary files of killed builds first (else they are reported)."""
    targets: list[str | None] = [None] if not names or "all" in names else list(names)
    return [VariantCheck(name, verify(data_dir, name, fix, extra)) for name in targets]


def failure(checks: list[VariantCheck]) -> ContractError | None:
    """The one-line error for contracts that fail, or None when every one holds."""
    failed = [label for c in checks for label in c.failed]
    if not failed:
        return None
    total = sum(len(c.results) for c in checks)
    hint = ""
    if any(label.endswith((TEMPORARY_LABEL, CATALOG_LABEL)) for label in failed):
        hint = " (`stb-pipeline verify --fix` removes temporary files and rewrites the catalog)"
    return ContractError(f"{len(failed)} of {total} contracts failed: {', '.join(failed)}{hint}")


#: How the check for temporary files left by killed builds is named to people.
TEMPORARY_LABEL = "no temporary files"
#: How the check for a commit left unfinished (its journal) is named to people.
JOURNAL_LABEL = "no unfinished commit"
#: How the check of the catalog (stb.duckdb) is named to people.
CATALOG_LABEL = f"catalog {catalog.CATALOG_NAME}"


def verify(
    data_dir: Path, variant: str | None = None, fix: bool = False, extra: Sequence[ExtraCheck] = ()
) -> list[ContractResult]:
    """Run every contract on the tables of ``data_dir`` (only ``variant``'s rows when given),
    then the ``extra`` checks. Lean files (the full Knucklebones game's states) are read through
    :data:`LEAN_GROUPS` of their row groups (:func:`lean_samples` says which).

    Temporary files of killed builds are reported as a failed check, or removed with ``fix``.

    TablesMissingError when there is no states table, or it has no rows of ``variant``;
    TableError when a table is not readable Parquet or not one of ours; ContractError when a
    contract file is missing, a table the manifest records is absent, or nothing was checked.
    """
    data_dir = Path(data_dir)
    tables.settle(data_dir, sweep=fix)  # without --fix, the temporary files are reported
    temporary = _temporary_result(data_dir)
    names = contract_names()
    _check_columns(data_dir)
    tables.read_table(data_dir, "states", variant, sweep=False)  # raises unless built
    recorded = _recorded_tables(data_dir)
    results = [
        _manifest_result(data_dir, recorded),
        _schema_result(data_dir),
        temporary,
        _journal_result(data_dir),
        _catalog_result(data_dir, fix),
    ]
    first_sql = len(results)
    results += [run_contract(name, data_dir, variant, recorded) for name in names]
    results += [r for check in extra for r in check(data_dir, variant)]
    if sum(r.checked for r in results[first_sql:]) == 0:
        raise ContractError(
            f"verify checked no rows in {data_dir} (every contract skipped or its tables empty)"
        )
    return results


def lean_samples(data_dir: Path) -> list[sql.LeanSample]:
    """What the contracts read of each lean file (none when there is no lean file)."""
    found = (
        sql.lean_sample(f, LEAN_GROUPS)
        for t in schema.COLUMNS
        for f in layout.table_files(data_dir, t)
    )
    return [x for x in found if x is not None]


def _check_columns(data_dir: Path) -> None:
    """TableError when a table the contracts read is unreadable or lacks a shared column."""
    for name, columns in REQUIRED_COLUMNS.items():
        path = tables.table_path(data_dir, name)  # its footer only: cheap on any table
        found = tables.file_columns(path) if path.exists() else None
        lacking = [c for c in columns if found is not None and c not in found]
        if lacking:
            raise TableError(
                f"{path} is not one of our tables (no column {', '.join(lacking)}); "
                f"{manifest.REBUILD}"
            )


def _recorded_tables(data_dir: Path) -> set[str]:
    """The tables manifest.json records; ContractError when one of them is absent."""
    recorded = manifest.read(data_dir).get("tables", {})
    for name, entry in sorted(recorded.items()):
        path = tables.table_path(data_dir, name)
        if not path.is_file():
            variants = ",".join(sorted(entry.get("variants", {}))) or "all"
            raise ContractError(
                f"{path} is missing although {manifest.MANIFEST_NAME} records it: "
                f"run `stb-pipeline build --force --variant {variants}`"
            )
    return set(recorded)


def run_contract(
    name: str, data_dir: Path, variant: str | None, recorded: set[str]
) -> ContractResult:
    """Run one SQL contract on the tables of ``data_dir`` (a data directory, or a dataset of
    `export dataset`); one reading an optional table that is neither in ``recorded`` (the
    tables manifest.json or the dataset records) nor on disk is skipped."""
    path = CONTRACTS_DIR.joinpath(f"{name}.sql")
    try:
        head, text = sql.header(path), sql.read_sql(path)
    except Exception as exc:  # any failure to read it means the contract cannot be trusted
        raise ContractError(f"contract file {path} cannot be read: {exc}") from None
    needs = head.get("inputs", "").replace(",", " ").split()
    built = {layout.logical_name(r) for r in recorded}  # shared files and variants' own
    absent = [
        t for t in OPTIONAL_TABLES
        if t in needs and t not in built and not layout.table_files(data_dir, t)
    ]  # fmt: skip
    description = head.get("description", "")
    if absent:
        return ContractResult(name, description, pl.DataFrame(), f"{', '.join(absent)} not built")
    con = sql.connect(data_dir, {"variant": variant}, lean_groups=LEAN_GROUPS)
    try:
        found = con.sql(text).pl()
        checked = _rows_checked(con, needs[0] if needs else "states", variant)
    except duckdb.Error as exc:
        raise sql.damaged(data_dir, exc) from None
    finally:
        con.close()
    return ContractResult(name, description, found, checked=checked)


def _rows_checked(con: duckdb.DuckDBPyConnection, table: str, variant: str | None) -> int:
    """Rows of a contract's first input table (the variant's rows when given)."""
    if not sql.NAME_PATTERN.fullmatch(table):
        return 0
    query = f"select count(*) from {table} where $v is null or variant = $v"
    row = con.execute(query, {"v": variant}).fetchone()
    return int(row[0]) if row else 0


def _manifest_result(data_dir: Path, recorded: set[str]) -> ContractResult:
    """Whether the table files are the ones manifest.json records."""
    description = "Every table file is the one manifest.json records (same sha256)."
    if not manifest.manifest_path(data_dir).exists():
        return ContractResult("manifest", description, pl.DataFrame(), "no manifest.json")
    problems = manifest.mismatches(data_dir)
    return ContractResult(
        "manifest", description, pl.DataFrame({"problem": problems}), checked=len(recorded)
    )


def _catalog_result(data_dir: Path, fix: bool) -> ContractResult:
    """Whether the catalog (stb.duckdb) holds the views `stb-pipeline query` reads over these
    tables; ``fix`` rewrites it first when it does not."""
    description = f"{catalog.CATALOG_NAME} holds the views of these tables (those query reads)."
    if not manifest.manifest_path(data_dir).exists():
        return ContractResult("catalog", description, pl.DataFrame(), "no manifest.json")
    now = catalog.state(data_dir)
    if fix and now != "current":
        with layout.data_lock(data_dir):
            catalog.refresh(data_dir)
        now = catalog.state(data_dir)
    if now == "busy":
        skipped = "another process holds it open for writing (the duckdb command: use -readonly)"
        return ContractResult("catalog", description, pl.DataFrame(), skipped)
    why = {
        "missing": "is missing",
        "stale": "is out of date: its views are not these tables' (a build was cut short, or "
        "the directory was moved or copied)",
        "changed": "holds views other than the ones it records (changed by hand?)",
    }
    problems = [] if now == "current" else [f"{catalog.CATALOG_NAME} {why[now]}"]
    return problem_result("catalog", description, problems, 1)


def _journal_result(data_dir: Path) -> ContractResult:
    """Whether a commit cut short is still pending (its journal could not be finished: the
    tables are then neither surely old nor new)."""
    description = f"No commit is left unfinished ({layout.JOURNAL_NAME} finished or absent)."
    problem = layout.unfinished_commit(data_dir)
    return problem_result("journal", description, [problem] if problem else [], 1)


def _temporary_result(data_dir: Path) -> ContractResult:
    """Whether the data directory holds temporary files of builds that were killed."""
    description = "No temporary file of a killed build is left (verify --fix removes them)."
    found = [p.relative_to(data_dir).as_posix() for p in layout.stale_temporaries(data_dir)]
    return problem_result("temporary", description, found, len(found))


def _schema_result(data_dir: Path) -> ContractResult:
    """Whether every table file has its table's one schema (store/schema.py): the same columns
    first, in the same order, whatever variants it holds; a lean file (the full Knucklebones
    game's states) holds the columns it declares, in the table's order, the key ones among them."""
    description = "Every table file has its table's columns first, in order (nulls where n/a)."
    problems: list[str] = []
    files = [(t, f) for t in schema.COLUMNS for f in layout.table_files(data_dir, t)]
    for table, path in files:
        found = tables.file_columns(path)
        want = [name for name, _ in schema.COLUMNS[table]]
        declared = tables.declared_columns(path)
        if declared is not None:  # lean: exactly what it says, a part of the table, in order
            lacks = [c for c in ("variant", "state_id", "value") if c not in found]
            in_order = [c for c in want if c in declared] == declared
            if found != declared or lacks or not in_order:
                problems.append(f"{path}: lean columns {found} (declared {declared})")
            continue
        if found[: len(want)] != want:
            missing = [c for c in want if c not in found]
            problems.append(f"{path}: lacks {missing}" if missing else f"{path}: column order")
    return problem_result("schema", description, problems, len(files))


def problem_result(
    name: str, description: str, problems: list[str], checked: int, title: str = ""
) -> ContractResult:
    """The result of a check that is not a SQL file: one row per problem found."""
    frame = pl.DataFrame({"problem": problems}, schema={"problem": pl.String})
    return ContractResult(name, description, frame, checked=checked, title=title)


def first_rows(result: ContractResult, n: int = 5) -> pl.DataFrame:
    """The first ``n`` offending rows of a contract, for display."""
    if "problem" in result.violations.columns:
        return result.violations.select("problem", pl.exclude("problem")).head(n)
    return result.violations.head(n)
