"""`stb-pipeline export`: the solved tables in other forms. `export dataset` is here; `export
verifier` (the course assignment's file) is in :mod:`pipeline.cli.course`.

No `from __future__ import annotations` here: typer reads the annotations at run time.
"""

from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli.options import DEFAULT_DATA_DIR, DataDir, Quiet

export_app = typer.Typer(
    help="Write solved tables in other formats.\n\n"
    "Example: stb-pipeline export dataset -o data-export",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@export_app.command("dataset")
def export_dataset(
    output: Annotated[
        Path, typer.Option("--output", "-o", metavar="DIR", help="Folder to write it in.")
    ],
    variant: Annotated[
        list[str],
        typer.Option(
            "--variant",
            "-v",
            metavar="NAME",
            help="Only these variants (repeat or comma-separate; default: every one built).",
        ),
    ] = [],  # noqa: B006  (typer needs a literal default)
    force: Annotated[
        bool, typer.Option("--force", help="Replace DIR even if it holds other files.")
    ] = False,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    quiet: Quiet = False,
) -> None:
    """Copy the built tables into DIR as a dataset: one Parquet file per table and variant, a
    dataset card (README.md, which the `datasets` library reads), dataset.json and SHA256SUMS.

    DIR is replaced whole when the copy is complete; it must be absent, empty or an earlier
    export (else --force). `stb-pipeline verify -d DIR` checks it.

    Example: stb-pipeline export dataset -o data-export --data-dir data
    """
    from pipeline.analysis import dataset
    from pipeline.cli.options import out
    from pipeline.games.registry import split_names

    report = dataset.export_dataset(data_dir, output, split_names(variant), force)
    out.print(
        f"{report.files} files of {report.variants} "
        f"variant{'' if report.variants == 1 else 's'} written to {report.path}: "
        f"{report.rows:,} rows, {report.bytes / 1e6:,.1f} MB in {report.seconds:.1f} s",
        markup=False,
    )


def register(app: typer.Typer) -> None:
    """Add `export` (`export dataset`; `export verifier` joins it from the course module)."""
    app.add_typer(export_app, name="export")
