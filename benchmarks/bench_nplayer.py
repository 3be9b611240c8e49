"""N-player Shut the Box through the whole `build` command: wall seconds and peak memory.

Each build runs as its own process (peak RSS from the kernel's accounting of that process) into
a fresh temporary data directory, beside a baseline in the same run: the course's two-player
build (`build --variant two-player`, the graph build it had before the N-player family), so
that the ratio holds on a busy machine.

Targets (issue 24), on the 2-core machine: four players, 9 tiles, at most 5 s; six players at
most 15 s; 12 tiles and four players at most 60 s; memory at most 1 GB each.

Usage: python benchmarks/bench_nplayer.py [--quick] (--quick leaves out the 12-tile build)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_build import run_measured

COURSE = ["--one-die", "forced", "--one-die-sum", "6"]
#: (label, build arguments, target seconds, target MB); the first is the baseline.
CASES = [
    ("two-player (baseline: graph build)", ["-v", "two-player"], None, None),
    ("four-player, 9 tiles", ["-v", "four-player"], 5.0, 1024.0),
    ("two-player-stake (digital scores)", ["-v", "two-player-stake"], None, 1024.0),
    ("six players, 9 tiles", ["--players", "6", *COURSE], 15.0, 1024.0),
    ("four players, 12 tiles", ["--players", "4", "--tiles", "12", *COURSE], 60.0, 1024.0),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="leave out the 12-tile build")
    args = parser.parse_args()
    cases = CASES[:-1] if args.quick else CASES
    # one untimed build first: numba's cache is then warm for every timed run
    with tempfile.TemporaryDirectory() as tmp:
        run_measured([sys.executable, "-m", "pipeline", "build", "-v", "three-player", "-d", tmp])
    table = Table(title="stb-pipeline build, N-player variants (each its own process)")
    for col in ("build", "seconds", "x baseline", "peak MB", "target", "met"):
        table.add_column(col, justify="left" if col == "build" else "right")
    base = None
    for label, argv, target_s, target_mb in cases:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "pipeline", "build", *argv, "-d", tmp, "-q"]
            wall, _, peak = run_measured(cmd)
        base = wall if base is None else base
        target = (
            ""
            if target_s is None and target_mb is None
            else (f"<= {target_s:g} s, " if target_s else "")
            + (f"<= {target_mb:g} MB" if target_mb else "")
        )
        met = (target_s is None or wall <= target_s) and (target_mb is None or peak <= target_mb)
        table.add_row(
            label, f"{wall:.2f}", f"{wall / base:.2f}", f"{peak:.0f}", target,
            "" if not target else ("yes" if met else "NO"),
        )  # fmt: skip
    Console(width=130).print(table)


if __name__ == "__main__":
    main()
