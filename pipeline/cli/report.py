"""`stb-pipeline report`: an HTML page with PNG charts from the built tables.

No `from __future__ import annotations` here: typer reads the annotations at run time, and
the shared option types come from `pipeline.cli.app` inside `register`.
"""

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the `report` command."""
    from pipeline.cli.options import DEFAULT_DATA_DIR, DataDir, Quiet, out

    @app.command("report")
    def report_cmd(
        out_dir: Annotated[
            Path, typer.Option("--out", "-o", help="Directory for index.html and the charts.")
        ] = Path("report"),
        data_dir: DataDir = DEFAULT_DATA_DIR,
        quiet: Quiet = False,
    ) -> None:
        """Write a self-contained HTML report with PNG charts of the solved tables.

        Example: stb-pipeline report --out data/report
        """
        from pipeline.analysis.report import build_report  # matplotlib loads only for this command

        report = build_report(data_dir, out_dir)
        out.print(f"wrote {report.page} and {len(report.charts)} charts")
        for title, why in report.skipped:
            out.print(f"skipped: {title}: {why}")
