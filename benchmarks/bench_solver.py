"""Solver benchmark: graph build and rank-order solve for growing boxes, one process each.

Prints a table of states, moves, seconds (steady, and the first run in a fresh process) and peak
memory for n = 9, 12, 16, 20 tiles (two dice
up to 12 tiles, three dice above), and, for scale, the naive recursive reference solver
(tests/support/reference.py, in the style of the Lever Box program
for the FiveThirtyEight Riddler) on the classic 9-tile box.

Usage: python benchmarks/bench_solver.py [--sizes 9:2,12:2,16:3,20:3]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pipeline import progress  # noqa: E402  (after the path: the scripts run from anywhere)


def measure(tiles: int, dice: int) -> dict[str, float]:
    """Build and solve one box twice in this process: the first run pays for loading numba's
    cached kernels and first-touching memory, the second shows the steady cost."""
    cold = measure_once(tiles, dice)
    warm = measure_once(tiles, dice)
    warm["cold_s"] = cold["graph_s"] + cold["solve_s"] + cold["policy_s"]
    return warm


def measure_once(tiles: int, dice: int) -> dict[str, float]:
    """Build and solve one box; return sizes, timings and peak memory."""
    import numpy as np

    from pipeline.games.shutbox.game import RuleSet, ShutTheBox
    from pipeline.solve.rank_order import best_moves, solve_rank_order

    game = ShutTheBox(RuleSet(tiles=tiles, dice=dice, objective="score"))
    t0 = time.perf_counter()
    g = game.graph()
    t1 = time.perf_counter()
    sol = solve_rank_order(g)
    t2 = time.perf_counter()
    best_moves(g, sol)
    t3 = time.perf_counter()
    return {
        "states": g.n_states,
        "moves": int(np.count_nonzero(g.mv_label >= 0)),
        "graph_s": t1 - t0,
        "solve_s": t2 - t1,
        "policy_s": t3 - t2,
        "value": float(sol.value[np.flatnonzero(g.state_id == game.full)[0]]),
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def measure_reference() -> dict[str, float]:
    """The naive recursive solver on the classic box (the Lever Box program's approach)."""
    sys.path.insert(0, str(REPO))
    from tests.support import reference

    t0 = time.perf_counter()
    value = reference.solver(reference.open_sum, lambda _: [2], maximise=False)(
        frozenset(range(1, 10))
    )
    return {
        "states": 512,
        "seconds": time.perf_counter() - t0,
        "value": float(value),
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def in_child(spec: str) -> dict[str, float]:
    """Run one measurement in a fresh interpreter so peak memory is its own."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", spec],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="9:2,12:2,16:3,20:3", help="tiles:dice,...")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.child == "reference":
            print(json.dumps(measure_reference()))
        else:
            tiles, dice = (int(x) for x in args.child.split(":"))
            print(json.dumps(measure(tiles, dice)))
        return
    table = Table(title="rank-order solver, objective: minimise expected score")
    for col in (
        "tiles",
        "dice",
        "states",
        "moves",
        "graph s",
        "solve s",
        "policy s",
        "total s",
        "first run s",
        "peak MB",
        "E(score) at start",
    ):
        table.add_column(col, justify="right")
    console = Console(width=max(Console().width, 130))
    for spec in args.sizes.split(","):
        with progress.task(f"measuring {spec} (tiles:dice)"):
            r = in_child(spec)
            tiles, dice = spec.split(":")
            total = r["graph_s"] + r["solve_s"] + r["policy_s"]
            table.add_row(
                tiles,
                dice,
                f"{r['states']:,}",
                f"{r['moves']:,}",
                f"{r['graph_s']:.3f}",
                f"{r['solve_s']:.3f}",
                f"{r['policy_s']:.3f}",
                f"{total:.3f}",
                f"{r['cold_s']:.3f}",
                f"{r['peak_mb']:.0f}",
                f"{r['value']:.6f}",
            )
    with progress.task("measuring the naive reference solver"):
        ref = in_child("reference")
    table.add_row(
        "9",
        "2",
        "512",
        "(naive)",
        "",
        "",
        "",
        f"{ref['seconds']:.3f}",
        f"{ref['seconds']:.3f}",
        f"{ref['peak_mb']:.0f}",
        f"{ref['value']:.6f}",
        style="dim",
    )
    console.print(table)


if __name__ == "__main__":
    main()
