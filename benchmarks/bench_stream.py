"""Streamed solver benchmark: solve, solve + write, peak memory, against a plain numpy solve.

For each size (objective: minimise the expected score) two fresh processes run, so that each
peak is its own:

- *solve*: the streamed solve alone (values only), then, in the same process, a plain numpy
  rank-order solve of the same values (one vectorised pass per layer, roll and candidate move,
  no graph); the table shows both times and their ratio, which is what to read on a busy
  machine, and checks that the values agree within 1e-12. Peak MB is read after the streamed
  solve, before the numpy one.
- *write*: the streamed solve writing the states and best-move policy tables (Parquet, zstd) to
  a temporary directory.

Times are wall seconds with the process's CPU seconds (all threads) in brackets: on a shared
machine the wall time depends on the other jobs, and CPU / 2 is what 2 free cores would need.

Targets: 24 tiles x 3 dice solve + write <= 60 s and <= 3 GB; 20 tiles x 2 dice <= 10 s and
<= 1 GB; the streamed solve at least 1.5x faster than numpy at 16, 20 and 24 tiles.

Usage: python benchmarks/bench_stream.py [--sizes 12:2,12:3,...] [--no-numpy] [--lean]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = ",".join(f"{t}:{d}" for t in range(12, 25, 2) for d in (2, 3))


def peak_mb() -> float:
    """This process's peak resident memory so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    """CPU seconds used by this process so far, all threads: on a shared machine, where wall
    time depends on the other jobs, CPU / cores bounds what the wall time would be alone."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def warm_up() -> None:
    """Load numba's cached kernels (or compile them) before any timing."""
    from pipeline.games.shutbox.game import RuleSet
    from pipeline.games.shutbox.stream import StreamSolver

    for batch in StreamSolver(RuleSet(tiles=4, dice=2, objective="score")).batches():
        assert batch.policy is not None


def numpy_solve(tiles: int, dice: int) -> np.ndarray:
    """Plain numpy rank-order solve of min E[score], always ``dice`` dice: values by id."""
    from pipeline.games.dice import roll_distribution
    from pipeline.games.shutbox.game import RuleSet, ShutTheBox, subsets_by_sum

    game = ShutTheBox(RuleSet(tiles=tiles, dice=dice, objective="score"))
    dist = roll_distribution(dice, 6)
    by_sum: dict[int, list[int]] = {}
    for m, total in subsets_by_sum(game.r, dice * 6):
        by_sum.setdefault(total, []).append(m)
    ids = np.arange(1 << tiles, dtype=np.int64)
    order = np.argsort(np.bitwise_count(ids.astype(np.uint64)), kind="stable")
    bounds = np.cumsum([0] + [math.comb(tiles, k) for k in range(tiles + 1)])
    value = np.zeros(1 << tiles)
    for k in range(1, tiles + 1):
        layer = order[bounds[k] : bounds[k + 1]]
        stuck = game.scores(layer).astype(np.float64)
        total = np.zeros(layer.shape[0])
        for roll, ways, denom in dist:
            best = np.full(layer.shape[0], np.inf)
            for m in by_sum.get(roll, []):
                legal = (layer & m) == m
                best = np.minimum(best, np.where(legal, value[layer ^ m], np.inf))
            total += ways / denom * np.where(np.isinf(best), stuck, best)
        value[layer] = total
    return value


def measure_solve(tiles: int, dice: int, with_numpy: bool) -> dict[str, float]:
    """Streamed solve, then the numpy solve of the same values in this process."""
    from pipeline.games.shutbox.game import RuleSet
    from pipeline.games.shutbox.stream import StreamSolver

    warm_up()
    solver = StreamSolver(RuleSet(tiles=tiles, dice=dice, objective="score"))
    t0, c0 = time.perf_counter(), cpu_s()
    value = solver.solve()
    out = {
        "states": 1 << tiles,
        "moves": solver.moves,
        "solve_s": time.perf_counter() - t0,
        "solve_cpu": cpu_s() - c0,
        "solve_mb": peak_mb(),
        "value": float(value[-1]),
    }
    if with_numpy:
        t0, c0 = time.perf_counter(), cpu_s()
        ref = numpy_solve(tiles, dice)
        out["numpy_s"] = time.perf_counter() - t0
        out["numpy_cpu"] = cpu_s() - c0
        out["numpy_mb"] = peak_mb()
        out["agree"] = float(np.max(np.abs(ref - value) / np.maximum(1.0, np.abs(ref))))
    return out


def measure_write(tiles: int, dice: int, lean: bool) -> dict[str, float]:
    """Streamed solve writing the states and best-move policy tables (``lean``: the policy
    without its derivable columns, see shutbox_stream.DERIVED_POLICY)."""
    from pipeline.games.shutbox.game import RuleSet
    from pipeline.games.shutbox.stream import (
        StreamSolver,
        parquet_options,
        schemas,
        state_constants,
    )
    from pipeline.store.stream_writer import write_streamed_many

    warm_up()
    rules = RuleSet(tiles=tiles, dice=dice, objective="score")
    names = ("states", "policy")
    with tempfile.TemporaryDirectory() as tmp:
        paths = {n: Path(tmp) / f"{n}.parquet" for n in names}
        sch, opts = schemas(lean=lean), parquet_options()
        constants = {"states": state_constants(rules, "bench"), "policy": {"variant": "bench"}}
        t0, c0 = time.perf_counter(), cpu_s()
        rows = write_streamed_many(
            paths,
            StreamSolver(rules).batches(policy=True),
            {n: sch[n] for n in names},
            constants,
            {n: opts[n] for n in names},
        )
        seconds, cpu = time.perf_counter() - t0, cpu_s() - c0
        size = sum(p.stat().st_size for p in paths.values())
    return {
        "write_s": seconds,
        "write_cpu": cpu,
        "write_mb": peak_mb(),
        "rows": rows["policy"],
        "file_mb": size / 2**20,
    }


def in_child(mode: str, spec: str, flags: list[str]) -> dict[str, float]:
    """Run one measurement in a fresh interpreter so that its peak memory is its own."""
    cmd = [sys.executable, __file__, "--child", f"{mode}:{spec}", *flags]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(out.stdout)


COLUMNS = (
    "tiles", "dice", "states", "moves", "solve s (cpu)", "numpy s (cpu)", "numpy / stream",
    "solve+write s (cpu)", "policy rows", "file MB", "solve MB", "write MB", "numpy MB",
    "max rel diff",
)  # fmt: skip


def row(tiles: str, dice: str, s: dict[str, float], w: dict[str, float]) -> list[str]:
    """One table row from the two children's measurements."""
    has_np = "numpy_s" in s
    return [
        tiles, dice, f"{s['states']:,}", f"{s['moves']:,}",
        f"{s['solve_s']:.2f} ({s['solve_cpu']:.1f})",
        f"{s['numpy_s']:.2f} ({s['numpy_cpu']:.1f})" if has_np else "",
        f"{s['numpy_s'] / s['solve_s']:.1f}x" if has_np else "",
        f"{w['write_s']:.2f} ({w['write_cpu']:.1f})", f"{w['rows']:,}", f"{w['file_mb']:.0f}",
        f"{s['solve_mb']:.0f}", f"{w['write_mb']:.0f}", f"{s['numpy_mb']:.0f}" if has_np else "",
        f"{s['agree']:.1e}" if has_np else "",
    ]  # fmt: skip


def main() -> None:
    """Measure every size in child processes and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="tiles:dice,...")
    parser.add_argument("--no-numpy", action="store_true", help="skip the numpy reference")
    parser.add_argument("--lean", action="store_true", help="write the lean policy")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    if args.child:
        mode, tiles, dice = args.child.split(":")
        if mode == "solve":
            print(json.dumps(measure_solve(int(tiles), int(dice), not args.no_numpy)))
        else:
            print(json.dumps(measure_write(int(tiles), int(dice), args.lean)))
        return
    table = Table(title="streamed solver (objective: minimise the expected score)")
    for col in COLUMNS:
        table.add_column(col, justify="right")
    console = Console(width=max(Console().width, 170))
    for spec in args.sizes.split(","):
        console.log(f"measuring {spec} (tiles:dice)")
        s = in_child("solve", spec, ["--no-numpy"] if args.no_numpy else [])
        w = in_child("write", spec, ["--lean"] if args.lean else [])
        table.add_row(*row(*spec.split(":"), s, w))
        console.log(json.dumps({**s, **w}))
    console.print(table)


if __name__ == "__main__":
    main()
