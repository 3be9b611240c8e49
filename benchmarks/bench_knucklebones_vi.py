"""The graph-free Knucklebones value iteration against today's graph solver.

Each measurement runs in a fresh child process (``python benchmarks/bench_knucklebones_vi.py
--child ...``) that prints one JSON line; its peak memory is its own ``resource.getrusage``
maximum resident size, so solvers and boards do not share a peak. ``vi`` is
:func:`pipeline.games.knucklebones.exact.cpu.solve` (values to 1e-11, both cores); ``full`` is the
same solver without its compact phase (``compact=False``: every sweep visits every live
position, as before the compact phase existed), the baseline of the ratio; ``graph`` is
``Knucklebones(rules).graph()`` + ``solve_value_iteration`` (small boards only: 3x2 takes
minutes and 7 GB). ``--sweeps N`` stops the big boards after N sweeps and reports the rate
(positions per second per sweep), for planning the full game. Seconds are wall time; cpu is the
child's user + system time (the machine is shared, so cpu / seconds shows how much of the two
cores it got).

Usage: python benchmarks/bench_knucklebones_vi.py [BOARD ...] [--sweeps N] [--no-graph] [--no-full]
       BOARD is CxR or CxRdF, e.g. 2x2 2x3 3x2 3x3d4 (default: 2x2 2x3 3x2)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["2x2", "2x3", "3x2"]
#: Boards the graph solver is also run on (larger ones take minutes and gigabytes).
GRAPH_MAX_STATES = 5_000_000


def parse_board(text: str, objective: str) -> object:
    """KnuckleRules of "CxR" or "CxRdF"."""
    from pipeline.games.knucklebones.game import KnuckleRules

    size, _, faces = text.partition("d")
    columns, rows = size.split("x")
    return KnuckleRules(int(columns), int(rows), int(faces or 6), objective)


def child(board: str, objective: str, solver: str, sweeps: int) -> dict:
    """Solve once in this process; the measurements as a dict."""
    import numpy as np

    from pipeline.errors import UsageError
    from pipeline.games.knucklebones.exact import cpu as vi

    rules = parse_board(board, objective)
    t0, c0 = time.perf_counter(), time.process_time()
    out: dict = {"positions": vi.tables(rules).n_states}
    if solver == "graph":
        from pipeline.games.knucklebones.game import Knucklebones
        from pipeline.solve.value_iteration import solve_value_iteration

        value = solve_value_iteration(Knucklebones(rules).graph()).value
        np.save(f"/tmp/bench_kb_graph_{board}_{objective}.npy", value)
    else:
        rates: list[float] = []
        try:
            sol = vi.solve(
                rules, max_sweeps=sweeps or 10_000, progress=lambda *a: rates.append(a[3]),
                compact=solver == "vi",
            )  # fmt: skip
            value, out["sweeps"], out["bound"] = sol.value, sol.sweeps, sol.bound
        except UsageError:  # --sweeps reached: only the rate is measured
            value, out["sweeps"] = None, sweeps
        out["rate"] = float(np.median(rates)) if rates else None
        if value is not None:
            graph = Path(f"/tmp/bench_kb_graph_{board}_{objective}.npy")
            if graph.exists():
                out["max_diff"] = float(np.abs(np.load(graph) - value).max())
            out["start"] = float(value[0])
    out["seconds"] = time.perf_counter() - t0
    out["cpu"] = time.process_time() - c0
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def run_child(board: str, objective: str, solver: str, sweeps: int) -> dict:
    """One measurement in a fresh process."""
    cmd = [sys.executable, __file__, "--child", board, objective, solver, str(sweeps)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Measure every board (graph solver first, so vi can report the largest difference)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("boards", nargs="*", default=DEFAULT)
    parser.add_argument("--objective", default="wins")
    parser.add_argument("--sweeps", type=int, default=0, help="stop after N sweeps (rate only)")
    parser.add_argument("--no-graph", action="store_true", help="skip the graph solver")
    parser.add_argument("--no-full", action="store_true", help="skip the full-sweep baseline")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        board, objective, solver, sweeps = args.child
        print(json.dumps(child(board, objective, solver, int(sweeps))))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(
        "board", "positions", "sweeps", "seconds", "cpu s", "peak MB", "M pos/s/sweep",
        "full s", "full MB", "ratio", "graph s", "graph MB", "max |diff|", "start value",
    )  # fmt: skip
    for board in args.boards:
        positions = parse_board(board, args.objective)
        small = not args.no_graph and _states(positions) <= GRAPH_MAX_STATES
        old = run_child(board, args.objective, "graph", 0) if small else None
        full = None if args.no_full else run_child(board, args.objective, "full", args.sweeps)
        new = run_child(board, args.objective, "vi", args.sweeps)
        table.add_row(
            f"{board} {args.objective}", f"{new['positions']:,}", str(new["sweeps"]),
            f"{new['seconds']:.1f}", f"{new['cpu']:.1f}", f"{new['peak_mb']:,.0f}",
            f"{(new['rate'] or 0) / 1e6:.2f}",
            f"{full['seconds']:.1f}" if full else "-", f"{full['peak_mb']:,.0f}" if full else "-",
            f"{new['seconds'] / full['seconds']:.2f}" if full else "-",
            f"{old['seconds']:.1f}" if old else "-", f"{old['peak_mb']:,.0f}" if old else "-",
            f"{new['max_diff']:.1e}" if "max_diff" in new else "-",
            f"{new['start']:.10f}" if "start" in new else "-",
        )  # fmt: skip
        Console(width=200).print(table)


def _states(rules: object) -> int:
    from pipeline.games.knucklebones.exact import cpu as vi

    return vi.tables(rules).n_states


if __name__ == "__main__":
    main()
