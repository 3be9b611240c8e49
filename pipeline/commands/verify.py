"""`stb-pipeline verify`: check the built tables against the data contracts."""

from pathlib import Path
from typing import Annotated

import polars as pl
import typer

from pipeline import verify
from pipeline.errors import ContractError


def register(app: typer.Typer) -> None:
    """Add the `verify` command."""
    from pipeline.cli import DEFAULT_DATA_DIR, DataDir, out

    @app.command("verify")
    def verify_cmd(
        variant: Annotated[
            str | None,
            typer.Option("--variant", "-v", help="Check only this variant's rows (default: all)."),
        ] = None,
        data_dir: DataDir = DEFAULT_DATA_DIR,
    ) -> None:
        """Check the tables against every contract in queries/contracts/ (exit 3 on a violation).

        Example: stb-pipeline verify --variant classic
        """
        results = verify.verify(Path(data_dir), variant)
        for r in results:
            status = "skip" if r.skipped else ("ok" if r.ok else "FAIL")
            detail = f" ({r.skipped})" if r.skipped else ""
            if not r.ok:
                n = r.violations.height
                detail = f": {n:,} offending row{'s' if n > 1 else ''}; the first:"
            out.print(f"{status:<4} {r.label}{detail}")
            if not r.ok:
                with pl.Config(
                    fmt_str_lengths=100,
                    tbl_hide_dataframe_shape=True,
                    tbl_hide_column_data_types=True,
                    tbl_width_chars=160,
                ):
                    out.print(str(verify.first_rows(r)))
        failed = [r.label for r in results if not r.ok]
        if failed:
            raise ContractError(
                f"{len(failed)} of {len(results)} contracts failed: {', '.join(failed)}"
            )
        out.print(f"all {len(results)} contracts hold in {data_dir}")
