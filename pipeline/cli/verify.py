"""`stb-pipeline verify`: check the built tables against the data contracts."""

from pathlib import Path
from typing import Annotated

import typer

from pipeline.errors import ContractError


def register(app: typer.Typer) -> None:
    """Add the `verify` command."""
    from pipeline.cli.options import DEFAULT_DATA_DIR, DataDir, out

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
    ) -> None:
        """Check the tables against every contract in queries/contracts/ (exit 3 on a violation).

        Example: stb-pipeline verify --variant classic
        """
        from pipeline.analysis import contracts as verify

        names = [n.strip() for v in variant or [] for n in v.split(",") if n.strip()]
        # `all` (or no --variant) checks every row at once; each named variant is checked alone
        targets: list[str | None] = [None] if not names or "all" in names else names
        failed: list[str] = []
        total = 0
        for name in targets:
            if len(targets) > 1:
                out.print(f"{name}:")
            results = verify.verify(Path(data_dir), name)
            _print_results(results)
            total += len(results)
            prefix = f"{name}: " if len(targets) > 1 else ""
            failed += [prefix + r.label for r in results if not r.ok]
        if failed:
            raise ContractError(f"{len(failed)} of {total} contracts failed: {', '.join(failed)}")
        out.print(f"all {total} contracts hold in {data_dir}")

    def _print_results(results: list) -> None:
        import polars as pl

        from pipeline.analysis import contracts as verify

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
