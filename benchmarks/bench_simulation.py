"""Monte Carlo speed: games per second for every strategy, printed as a table (not a test).

Run: python benchmarks/bench_simulation.py [--games N] [--seed S] [--variant NAME ...]
The target is at least 5 million games per second per strategy on the 2-core machine. Times are
for playing the games only: the kernel is compiled (or loaded from numba's cache) beforehand.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numba
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline import progress
from pipeline.games.registry import get_variant
from pipeline.games.shutbox import benchmark
from pipeline.games.solved import Solved

TARGET = 5_000_000


def main() -> None:
    """Simulate every strategy of each variant and print the speed table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=5_000_000, help="games per strategy")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variant", action="append", help="variant (repeat; default classic)")
    args = parser.parse_args()
    table = Table(
        title=f"Monte Carlo, {args.games:,} games per strategy, seed {args.seed}, "
        f"{numba.get_num_threads()} threads",
        title_justify="left",
    )
    for col in ("variant", "strategy", "win %", "exact %", "seconds", "games/s", ">= 5M/s"):
        table.add_column(col, justify="left" if col in ("variant", "strategy") else "right")
    for name in args.variant or ["classic"]:
        variant = get_variant(name)
        game = variant.make()
        s = Solved(variant, game, game.graph())
        with progress.task(f"{name}: {args.games:,} games per strategy", unit="strategies") as job:
            sims = benchmark.simulate_strategies(
                s, args.games, args.seed, None, lambda n: job.update(note=n)
            )
        for m in sims:
            rate = m.result.games / m.result.seconds
            table.add_row(
                name,
                m.name,
                f"{100 * m.result.win_rate:.3f}",
                f"{100 * m.exact_win_rate:.3f}",
                f"{m.result.seconds:.3f}",
                f"{rate:,.0f}",
                "yes" if rate >= TARGET else "no",
            )
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
