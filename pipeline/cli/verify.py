"""`stb-pipeline verify`: check the built tables against the data contracts."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from pipeline.analysis.contracts import ContractResult


def register(app: typer.Typer) -> None:
    """Add the `verify` command."""
    from pipeline.cli.options import DEFAULT_DATA_DIR, DataDir, Quiet

    @app.command("verify")
    def verify_cmd(
        variant: Annotated[
            list[str] | None,
            typer.Option(
                "--variant",
                "-v",
                help="Check only these variants' rows (repeat or comma-separate; default: all).",
            ),
        ] = None,
        data_dir: DataDir = DEFAULT_DATA_DIR,
        fix: Annotated[
            bool,
            typer.Option(
                "--fix",
                help="Remove the temporary files of killed builds, and rewrite a catalog that "
                "is missing or out of date, instead of failing.",
            ),
        ] = False,
        quiet: Quiet = False,
    ) -> None:
        """Check the tables against every contract in queries/contracts/ (exit 3 on a violation).

        Each contract prints the rows it checked and its violations. Exit 3 also when a contract
        file or a table that manifest.json records is missing, when nothing was checked, when
        a killed build left temporary files (--fix removes them; any other command does too),
        or when the catalog stb.duckdb is not the tables' (--fix rewrites it). On a folder of
        `export dataset`: every file's sha256, dataset.json, the published figures, contracts.

        Example: stb-pipeline verify --variant classic
        """
        from pipeline.analysis import contracts
        from pipeline.games.registry import split_names
        from pipeline.store import sources

        names = split_names(variant or [])
        if sources.is_dataset(Path(data_dir)):  # written by `export dataset`
            from pipeline.analysis import dataset_checks

            checks = dataset_checks.verify_variants(Path(data_dir), names)
        else:
            checks = contracts.verify_variants(Path(data_dir), names, fix, [_lean_boards])
        for sample in contracts.lean_samples(Path(data_dir)):  # what the contracts read of them
            _print(f"lean table {sample.describe(Path(data_dir))}")
        for check in checks:
            if len(checks) > 1:
                _print(f"{check.variant}:")
            for result in check.results:
                print_result(result)
        error = contracts.failure(checks)
        if error is not None:
            raise error
        total = sum(len(c.results) for c in checks)
        rows = sum(r.checked for c in checks for r in c.results if r.name not in UNITS)
        _print(f"all {total} contracts hold in {data_dir}: {rows:,} rows checked")


#: What the checks that do not count rows count.
UNITS = {
    "manifest": "tables",
    "catalog": "files",
    "journal": "journal",
    "checksums": "files",
    "index": "files",
    "published": "figures",
    "artefact": "values",
}


def _lean_boards(data_dir: Path, variant: str | None) -> list["ContractResult"]:
    """The sampled Bellman check of the Knucklebones boards stored lean (none: nothing to
    import, nothing to check)."""
    from pipeline.analysis import contracts

    if not contracts.lean_samples(data_dir):
        return []
    from pipeline.apps.knucklebones.known import verify_lean_boards

    return verify_lean_boards(data_dir, variant)


def _print(text: str) -> None:
    from pipeline.cli.options import out

    out.print(text, markup=False)


def print_result(r: "ContractResult") -> None:
    """One line per contract (ok, FAIL or skip, rows checked, violations), then bad rows: how
    `verify` and `knucklebones check-artefacts` say their contracts' results."""
    import polars as pl

    from pipeline.analysis import contracts

    if r.skipped:
        _print(f"skip {r.label} ({r.skipped})")
        return
    unit = UNITS.get(r.name, "rows")
    n = r.violations.height
    _print(
        f"{'ok' if r.ok else 'FAIL':<4} {r.label}: {r.checked:,} {unit} checked, "
        f"{n:,} violation{'' if n == 1 else 's'}"
    )
    if not r.ok:
        with pl.Config(
            fmt_str_lengths=100,
            tbl_hide_dataframe_shape=True,
            tbl_hide_column_data_types=True,
            tbl_width_chars=160,
        ):
            _print(str(contracts.first_rows(r)))
