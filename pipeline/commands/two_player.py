"""Commands of the two-player game: `export verifier` and `check-verifier` (seed 002's format)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from pipeline import verifier
from pipeline.games.two_player import TwoPlayer, TwoPlayerRules
from pipeline.variants import Variant, get_variant

export_app = typer.Typer(
    help="Write solved tables in other formats.\n\n"
    "Example: stb-pipeline export verifier --variant two-player -o two-player.verifier",
    no_args_is_help=True,
)

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


def default_data_dir() -> Path:
    """$STB_DATA_DIR, or data/."""
    return Path(os.environ.get("STB_DATA_DIR", "data"))


def pick(
    name: str, tiles: int | None, dice: int | None, sides: int | None, one_die_sum: int | None
) -> tuple[Variant, bool]:
    """The two-player variant asked for, and whether it comes from rule options (no tables)."""
    options = {"tiles": tiles, "dice": dice, "sides": sides, "one_die_sum": one_die_sum}
    given = {k: v for k, v in options.items() if v is not None}
    if not given:
        return get_variant(name), False
    rules = TwoPlayerRules(**given)
    named = get_variant(name)
    game = named.make()
    if isinstance(game, TwoPlayer) and game.rules() == rules.to_dict():
        return named, False  # the options just restate the named variant's rules
    return Variant(rules.slug(), "custom two-player rules", lambda: TwoPlayer(rules), False), True


@contextlib.contextmanager
def tables_for(variant: Variant, custom: bool, data_dir: Path) -> Iterator[Path]:
    """The data directory to read: the given one, or a temporary one solved for custom rules."""
    if not custom:
        yield data_dir
        return
    verifier.two_player_game(variant)
    with verifier.solved_data_dir(variant) as tmp:
        yield tmp


@export_app.command("verifier")
def export_verifier(
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write.")],
    variant: VariantName = "two-player",
    data_dir: DataDir = None,  # type: ignore[assignment]
    tiles: Tiles = None,
    dice: Dice = None,
    sides: Sides = None,
    one_die_sum: OneDieSum = None,
) -> None:
    """Write seed 002's verifier file: every nonterminal state after all of its successors.

    Lines are TILES,VALUE (player 1) or TILES,P1SCORE,VALUE (player 2), at full precision.

    Example: stb-pipeline export verifier --variant two-player -o two-player.verifier
    """
    chosen, custom = pick(variant, tiles, dice, sides, one_die_sum)
    with tables_for(chosen, custom, data_dir or default_data_dir()) as source:
        lines = verifier.export_lines(source, chosen)
    verifier.write_text_atomic(output, "".join(f"{line}\n" for line in lines))
    typer.echo(f"wrote {len(lines):,} lines of {chosen.name} to {output}")


def check_verifier(
    file: Annotated[Path, typer.Argument(help="A verifier file (yours, or an export).")],
    variant: VariantName = "two-player",
    tolerance: Annotated[
        float, typer.Option(help="Relative tolerance of the value check.")
    ] = verifier.DEFAULT_TOLERANCE,
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

    Example: stb-pipeline check-verifier --variant two-player two-player.verifier
    """
    chosen, custom = pick(variant, tiles, dice, sides, one_die_sum)
    with tables_for(chosen, custom, data_dir or default_data_dir()) as source:
        report = verifier.check_file(file, source, chosen, tolerance)
    if report.ok:
        lines = f"{report.lines:,} line{'' if report.lines == 1 else 's'}"
        typer.echo(f"{file}: {lines}, all values right, every line after its successors")
        return
    for problem in report.problems if all_problems else report.problems[:1]:
        typer.echo(f"{file}: {problem}")
    if not all_problems and len(report.problems) > 1:
        typer.echo(f"{file}: {len(report.problems) - 1:,} more wrong lines (--all lists them)")
    raise typer.Exit(verifier.EXIT_BAD_FILE)


def register(app: typer.Typer) -> None:
    """Add `export` (with `export verifier`) and `check-verifier`."""
    app.add_typer(export_app, name="export")
    app.command("check-verifier")(check_verifier)
