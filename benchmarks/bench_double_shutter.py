"""Double Shutter timings: graph, solve, the p(n) family batched vs one solve per n, tables.

Run: python benchmarks/bench_double_shutter.py [--exact]

``--exact`` also solves the full box in exact fractions (pipeline/solvers/exact.py, about 35 s on
one core) and prints the exact minimum expected score and P(score = 0), with the largest relative
difference from the float solver over all 19,683 states.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pipeline.games.double_shutter.game import DoubleShutter, DoubleShutterRules
from pipeline.games.registry import get_variant
from pipeline.games.solved import Solved
from pipeline.solve.exact import solve_exact
from pipeline.solve.rank_order import solve_rank_order
from pipeline.stages import frames as stages

TARGETS = range(21)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """The result of ``fn()`` and the seconds it took."""
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def main(exact: bool) -> None:
    """Print the timing table (and the exact cross-check when asked)."""
    game = DoubleShutter(DoubleShutterRules(), thresholds=TARGETS)
    g, t_graph = timed(game.graph)
    sol, t_solve = timed(lambda: solve_rank_order(g))
    family, t_batch = timed(lambda: game.threshold_family(g, TARGETS))

    def one_by_one() -> np.ndarray:
        out = []
        for n in TARGETS:
            rules = DoubleShutterRules(objective="target", target=n)
            out.append(solve_rank_order(DoubleShutter(rules).graph()).value)
        return np.stack(out, axis=1)

    singles, t_singles = timed(one_by_one)
    agree = float(np.abs(singles - family.value).max())
    variant = get_variant("double-shutter")
    solved = Solved(variant, variant.make(), g)
    frames, t_tables = timed(lambda: stages.stage_frames(solved, stages.STAGES))

    table = Table(title="Double Shutter (19,683 states)", title_justify="left")
    for col in ("step", "seconds", "note"):
        table.add_column(col, justify="right" if col == "seconds" else "left", overflow="fold")
    table.add_row("graph", f"{t_graph:.2f}", f"{g.mv_node.shape[0]:,} move rows")
    table.add_row("solve (rank order)", f"{t_solve:.2f}", escape(f"E[score] = {sol.value[0]:.12g}"))
    table.add_row("p(n), n = 0..20, batched", f"{t_batch:.2f}", escape("one [states, 21] solve"))
    table.add_row(
        "p(n), n = 0..20, one by one",
        f"{t_singles:.2f}",
        f"graph and solve per n; max difference {agree:.1e}",
    )
    rows = ", ".join(f"{k} {f.height:,}" for k, f in sorted(frames.items()))
    table.add_row("all tables (build)", f"{t_tables:.2f}", rows)
    if exact:
        for objective in ("score", "shut"):
            eg = DoubleShutter(DoubleShutterRules(objective=objective)).graph()
            values, t_exact = timed(lambda eg=eg: solve_exact(eg))
            floats = solve_rank_order(eg).value
            rel = max(
                abs(float(v) - f) / max(1.0, abs(f)) for v, f in zip(values, floats, strict=True)
            )
            table.add_row(
                f"exact fractions ({objective})",
                f"{t_exact:.2f}",
                f"{values[0]} (max rel {rel:.1e})",
            )
    Console().print(table)


if __name__ == "__main__":
    main(exact="--exact" in sys.argv[1:])
