"""Commands of the two-player game: `export verifier` and `check-verifier` (the course
assignment's format)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipeline.apps.course.formats import DEFAULT_TOLERANCE, EXIT_BAD_FILE
from pipeline.cli.export import export_app

DataDir = Annotated[
    Path,
    typer.Option(
        "--data-dir",
        "-d",
        help="Directory of the Parquet tables (default: $STB_DATA_DIR, else data).",
    ),
]
VariantName = Annotated[
    str, typer.Option("--variant", "-v", help="A two-player variant (see `stb-pipeline variants`).")
]
PANEL = "Custom two-player rules (solved on the spot, not read from the tables)"
Tiles = Annotated[int | None, typer.Option(help="Tiles 1..N.", rich_help_panel=PANEL)]
Dice = Annotated[int | None, typer.Option(help="Dice normally rolled.", rich_help_panel=PANEL)]
Sides = Annotated[int | None, typer.Option(help="Sides of each die.", rich_help_panel=PANEL)]
OneDieSum = Annotated[
    int | None,
    typer.Option(
        help="One die (forced) when the mover's open tiles sum to at most this; 0: never.",
        rich_help_panel=PANEL,
    ),
]


@export_app.command("verifier")
def export_verifier(
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write.")],
    variant: VariantName = "two-player",
    data_dir: DataDir = None,  # type: ignore[assignment]
    tiles: Tiles = None,
    dice: Dice = None,
    sides: Sides = None,
    one_die_sum: OneDieSum = None,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE if it exists.")] = False,
) -> None:
    """Write the course assignment's verifier file: every nonterminal state after all of its
    successors.

    Lines are TILES,VALUE (player 1) or TILES,P1SCORE,VALUE (player 2), at full precision.

    Example: stb-pipeline export verifier --variant two-player -o data/two-player.verifier
    """
    from pipeline.apps.course import verifier
    from pipeline.store.layout import default_data_dir
    from pipeline.store.outputs import check_output, write_output

    chosen, custom = verifier.pick_two_player(variant, tiles, dice, sides, one_die_sum)
    check_output(output, data_dir or default_data_dir(), force)
    with verifier.tables_for(chosen, custom, data_dir or default_data_dir()) as source:
        lines = verifier.export_lines(source, chosen)
    write_output(output, "".join(f"{line}\n" for line in lines).encode("ascii"))  # atomic
    typer.echo(f"wrote {len(lines):,} lines of {chosen.name} to {output}")


def check_verifier(
    file: Annotated[Path, typer.Argument(help="A verifier file (yours, or an export).")],
    variant: VariantName = "two-player",
    tolerance: Annotated[
        float, typer.Option(help="Relative tolerance of the value check.")
    ] = DEFAULT_TOLERANCE,
    all_problems: Annotated[
        bool, typer.Option("--all", help="List every wrong line, not only the first.")
    ] = False,
    data_dir: DataDir = None,  # type: ignore[assignment]
    tiles: Tiles = None,
    dice: Dice = None,
    sides: Sides = None,
    one_die_sum: OneDieSum = None,
) -> None:
    """Check a verifier file against the solved tables; exit 3 at the first wrong line.

    Wrong lines: missing successor, incorrect value, unknown state, bad format.

    Example: stb-pipeline check-verifier --variant two-player data/two-player.verifier
    """
    from pipeline.apps.course import verifier
    from pipeline.store.layout import default_data_dir

    verifier.check_tolerance(tolerance)
    chosen, custom = verifier.pick_two_player(variant, tiles, dice, sides, one_die_sum)
    with verifier.tables_for(chosen, custom, data_dir or default_data_dir()) as source:
        report = verifier.check_file(file, source, chosen, tolerance)
    if report.ok:
        lines = f"{report.lines:,} line{'' if report.lines == 1 else 's'}"
        typer.echo(f"{file}: {lines}, all values right, every line after its successors")
        return
    for problem in report.problems if all_problems else report.problems[:1]:
        typer.echo(f"{file}: {problem}")
    if not all_problems and len(report.problems) > 1:
        typer.echo(f"{file}: {len(report.problems) - 1:,} more wrong lines (--all lists them)")
    raise typer.Exit(EXIT_BAD_FILE)


def register(app: typer.Typer) -> None:
    """Add `check-verifier` (`export verifier` joins the `export` group of
    :mod:`pipeline.cli.export` as this module loads)."""
    app.command("check-verifier")(check_verifier)
