"""Monte Carlo speed: games per second for every strategy, printed as a table (not a test).

Run: python benchmarks/bench_simulation.py [--games N] [--seed S] [--variant NAME ...]
     [--shell-games N] [--python-games N]

Targets (issue 14): each strategy's compiled kernel plays at least 20 million games per second
in-process, and `stb-pipeline benchmark --variant classic --games 8000000` (every strategy, from
the shell: start-up, solving, compiling the policies and writing benchmarks.parquet included)
at least 5 million games per second overall. In-process times are for playing the games only:
the kernel is compiled (or loaded from numba's cache) beforehand.

The baseline in the same run is the kernel's own Python source run by the interpreter (numba's
``py_func``) on the same policy and seed, for a few thousand games: the ratio shows what
compiling buys. The shell command's peak memory comes from the kernel's accounting of that
process.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_build import run_measured  # noqa: E402

from pipeline import progress  # noqa: E402
from pipeline.games.registry import get_variant  # noqa: E402
from pipeline.games.shutbox import benchmark  # noqa: E402
from pipeline.games.solved import Solved  # noqa: E402
from pipeline.solve import simulate  # noqa: E402

TARGET = 20_000_000
SHELL_TARGET = 5_000_000


def interpreted_rate(s: Solved, games: int, seed: int) -> float:
    """Games per second of the simulation loop run by the Python interpreter (optimal play)."""
    e = benchmark.evaluate_strategies(s, ["optimal"])[0]
    view = benchmark.view_of(s)
    assert view is not None
    c = simulate.compile_policy(
        s.graph, e.policy, benchmark.start_index(s), view.score == 0, view.score
    )
    args = simulate.kernel_args(c)
    play, mix = simulate._play.py_func, simulate._mix.py_func
    key = simulate.seed_key(seed)
    saved = simulate._mix
    simulate._mix = mix  # the interpreted loop calls the interpreted mixer
    try:
        # splitmix64 wraps around 2**64 on purpose: compiled, silently; numpy's scalars warn
        with np.errstate(over="ignore"):
            t0 = time.perf_counter()
            for game in range(games):
                play(args, mix(key + np.uint64(game) * simulate.GOLDEN))
            return games / (time.perf_counter() - t0)
    finally:
        simulate._mix = saved


def shell_run(games: int, seed: int) -> tuple[float, float, float]:
    """Wall seconds, peak MB and overall games per second of `stb-pipeline benchmark` (every
    strategy of classic) in a fresh data directory."""
    cli = shutil.which("stb-pipeline") or sys.exit("stb-pipeline is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        argv = [cli, "benchmark", "--variant", "classic", "--seed", str(seed)]
        run_measured([*argv, "--games", "1000", "-d", f"{tmp}/warm"])  # numba's caches
        wall, _, peak = run_measured([*argv, "--games", str(games), "-d", f"{tmp}/data"])
    total = games * len(benchmark.strategies.STRATEGIES)
    return wall, peak, total / wall


def main() -> None:
    """Simulate every strategy of each variant and print the speed table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=5_000_000, help="games per strategy")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variant", action="append", help="variant (repeat; default classic)")
    parser.add_argument("--python-games", type=int, default=20_000, help="interpreted baseline")
    parser.add_argument(
        "--shell-games", type=int, default=8_000_000, help="games per strategy from the shell"
    )
    args = parser.parse_args()
    table = Table(
        title=f"Monte Carlo, {args.games:,} games per strategy, seed {args.seed}, "
        f"{numba.get_num_threads()} threads",
        title_justify="left",
    )
    heads = (
        "variant",
        "strategy",
        "win %",
        "exact %",
        "seconds",
        "games/s",
        "x python",
        ">= 20M/s",
    )
    for col in heads:
        table.add_column(col, justify="left" if col in ("variant", "strategy") else "right")
    for name in args.variant or ["classic"]:
        variant = get_variant(name)
        game = variant.make()
        s = Solved(variant, game, game.graph())
        with progress.task(f"{name}: {args.games:,} games per strategy", unit="strategies") as job:
            sims = benchmark.simulate_strategies(
                s, args.games, args.seed, None, lambda n: job.update(note=n)
            )
        with progress.task(f"{name}: {args.python_games:,} games interpreted"):
            base = interpreted_rate(s, args.python_games, args.seed)
        table.add_row(name, "optimal, interpreted", "", "", "", f"{base:,.0f}", "1", "")
        for m in sims:
            rate = m.result.games / m.result.seconds
            table.add_row(
                name,
                m.name,
                f"{100 * m.result.win_rate:.3f}",
                f"{100 * m.exact_win_rate:.3f}",
                f"{m.result.seconds:.3f}",
                f"{rate:,.0f}",
                f"{rate / base:,.0f}",
                "yes" if rate >= TARGET else "no",
            )
    console = Console(width=max(Console().width, 120))
    console.print(table)
    if args.shell_games:
        with progress.task(f"stb-pipeline benchmark --games {args.shell_games:,}"):
            wall, peak, rate = shell_run(args.shell_games, args.seed)
        shell = Table(title="From the shell, every strategy of classic", title_justify="left")
        for col in ("command", "wall s", "peak MB", "games/s overall", ">= 5M/s"):
            shell.add_column(col, justify="left" if col == "command" else "right")
        shell.add_row(
            f"stb-pipeline benchmark --variant classic --games {args.shell_games}",
            f"{wall:.2f}",
            f"{peak:,.0f}",
            f"{rate:,.0f}",
            "yes" if rate >= SHELL_TARGET else "no",
        )
        console.print(shell)


if __name__ == "__main__":
    main()
