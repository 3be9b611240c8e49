"""`stb-pipeline benchmark`: play every strategy by Monte Carlo and compare with exact values."""

# No `from __future__ import annotations`: typer reads the Annotated options at run time.

from typing import Annotated, Any

import typer

from pipeline.cli.options import (
    DEFAULT_DATA_DIR,
    DataDir,
    LazyConsole,
    OneVariant,
    Quiet,
    out,
    pick_one,
    with_rules,
)
from pipeline.games.registry import Variant
from pipeline.games.shutbox.names import DEFAULT_GAMES, DEFAULT_SEED
from pipeline.games.shutbox.names import STRATEGY_NAMES as NAMES

#: The table has ten columns: print it wider than the shared console's minimum.
wide = LazyConsole(lambda: max(out.width, 132), highlight=False)


def register(app: typer.Typer) -> None:
    """Add the `benchmark` command."""
    app.command("benchmark")(benchmark_cmd)


@with_rules
def benchmark_cmd(
    variant: OneVariant = None,
    games: Annotated[int, typer.Option("--games", "-n", help="Games per strategy.")] = (
        DEFAULT_GAMES
    ),
    seed: Annotated[int, typer.Option("--seed", help="Random seed (recorded).")] = (DEFAULT_SEED),
    strategy: Annotated[
        list[str] | None,
        typer.Option(
            "--strategy", "-s", help=f"Strategies to play (default all): {', '.join(NAMES)}."
        ),
    ] = None,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    quiet: Quiet = False,
    custom: Variant | None = None,
) -> None:
    """Simulate every strategy and add the results to benchmarks.parquet.

    Each strategy plays GAMES games from the start (numba, all cores; the same seed gives the
    same numbers on any number of threads). The table shows the win rate (all tiles shut) with its
    95 % Wilson interval next to the exact value, and flags a strategy whose exact value lies
    outside; earlier simulation rows of the same variant and strategy are replaced.

    Example: stb-pipeline benchmark --variant classic --games 1000000 --seed 1
    """
    from pipeline.games.registry import split_names
    from pipeline.stages.simulation import run_benchmark

    chosen = pick_one(variant, custom, data_dir)
    names = split_names(strategy, "--strategy") if strategy else None
    sims = run_benchmark(chosen, games, seed, data_dir, names)
    print_table(chosen.name, games, seed, sims)
    out.print(f"rows written to {data_dir}/benchmarks.parquet")


def print_table(variant: str, games: int, seed: int, sims: list[Any]) -> None:
    """The benchmark as a table, with a flag where the exact value falls outside the interval."""
    from rich.table import Table

    table = Table(
        title=f"{variant}: {games:,} games per strategy, seed {seed}", title_justify="left"
    )
    heads = ("strategy", "wins", "win %", "95 % CI", "exact %", "flag", "mean score", "exact")
    for h in (*heads, "seconds", "games/s"):
        table.add_column(h, justify="left" if h == "strategy" else "right", no_wrap=True)
    flagged = []
    for m in sims:
        r = m.result
        flag = "" if m.win_rate_inside else "OUTSIDE"
        if not m.score_inside:
            flag = (flag + " score").strip()
        if flag:
            flagged.append(m.name)
        table.add_row(
            m.name,
            f"{r.wins:,}",
            f"{100 * r.win_rate:.3f}",
            f"{100 * m.ci[0]:.3f}-{100 * m.ci[1]:.3f}",
            f"{100 * m.exact_win_rate:.3f}",
            flag,
            f"{r.mean_score:.3f}",
            f"{m.exact_score:.3f}",
            f"{r.seconds:.3f}",
            f"{r.games / r.seconds:,.0f}",
        )
    wide.print(table)
    if flagged:
        out.print(
            f"exact value outside the 95 % interval for: {', '.join(flagged)} "
            "(expect about 1 in 20 by chance)"
        )
    else:
        out.print("every exact value lies inside its 95 % interval")
