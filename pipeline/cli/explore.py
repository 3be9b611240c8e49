"""`stb-pipeline explore`: one self-contained HTML page to explore the solved positions.

No `from __future__ import annotations` here: typer reads the annotations at run time.
"""

import sys
from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli.options import DEFAULT_DATA_DIR, DataDir, Quiet, out

Names = Annotated[
    list[str],
    typer.Option(
        "--variant",
        "-v",
        help="Variants to include (repeat or comma-separate; default: every built one the page "
        "draws, one row of tiles: the registered one-player and N-player boxes, and the custom "
        "ones built; one too big to embed is listed on the page instead).",
    ),
]
Output = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="The HTML file (default: DATA_DIR/explorer.html)."),
]
Force = Annotated[
    bool, typer.Option("--force", help="Replace an existing file outside the data directory.")
]


def explore_cmd(
    variant: Names = [],  # noqa: B006  (typer needs a literal default)
    data_dir: DataDir = DEFAULT_DATA_DIR,
    output: Output = None,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """Write one self-contained HTML page: set a position and a roll, see every move ranked.

    The page embeds the solved tables: it needs no server and no network.

    N-player games: pick the seat, the best score so far and how many share it; the page
    shows every player's share and every move ranked.

    Its address keeps the position (#classic/12345/7; #four-player/3/11/1/134/7 for player
    3 facing a best score of 11 held by one player), so a link shares it.

    Example: stb-pipeline explore --variant classic,lever -o data/explorer.html
    """
    from pipeline import progress
    from pipeline.apps.explorer import delayed_progress, write_explorer  # polars loads only here

    def report(message: str) -> None:
        print(f"explore: {message} ...", file=sys.stderr, flush=True)

    # --quiet (or STB_QUIET=1) as for every command: no progress lines
    shown = None if progress.is_quiet() else delayed_progress(report)
    page = write_explorer(data_dir, output, variant, force, shown)
    kib = page.size / 1024
    out.print(f"wrote {page.path} ({kib:,.0f} KiB): {', '.join(page.variants)}")
    if page.unbuilt:  # one line for them all, and the command that adds them
        names = ", ".join(page.unbuilt)
        command = f"stb-pipeline build --variant {','.join(page.unbuilt)} -d {data_dir}"
        out.print(f"not built, so not on the page: {names} (`{command}` adds them)")
    for name, why in page.left_out:
        out.print(f"left out {name}: {why}")
    for name, why in page.skipped:
        out.print(f"skipped {name}: {why}")


def register(app: typer.Typer) -> None:
    """Add the `explore` command."""
    app.command("explore")(explore_cmd)
