"""Knucklebones boards through `stb-pipeline build`: wall time and peak memory per variant.

Each variant is built by a fresh `python -m pipeline build` process into a temporary data
directory (after a small variant, so that the big tables are merged into existing files as in
real use); the peak resident memory is that process's own (``os.wait4``).
The opt-in boards take minutes each: knucklebones-3x2 about 3 and knucklebones-3x3-d4 about 6
on this machine (2 shared cores), about 7 GB peak each.

Usage: python benchmarks/bench_knucklebones_build.py [VARIANT ...]
       (default: knucklebones-2x3 knucklebones-3x2 knucklebones-3x3-d4)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pipeline import progress  # noqa: E402  (after the path: the scripts run from anywhere)

DEFAULT = ["knucklebones-2x3", "knucklebones-3x2", "knucklebones-3x3-d4"]


def build(variant: str, data_dir: Path) -> tuple[float, float]:
    """Seconds and peak resident GB of one `build --variant` child process."""
    env = {**os.environ, "COLUMNS": "200"}
    t0 = time.perf_counter()
    # wait4 gives this child's own peak (RUSAGE_CHILDREN would be the largest child so far)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "build", "--variant", variant, "--force",
         "--data-dir", str(data_dir)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"build of {variant} failed")
    return seconds, usage.ru_maxrss / 2**20  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="*", default=DEFAULT)
    args = parser.parse_args()
    table = Table(title="stb-pipeline build, one process per variant")
    for col in ("variant", "seconds", "peak GB"):
        table.add_column(col, justify="left" if col == "variant" else "right")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        build("knucklebones-2x2", data)
        for variant in progress.tracked(args.variants, "building", unit="variants"):
            seconds, peak = build(variant, data)
            table.add_row(variant, f"{seconds:.0f}", f"{peak:.1f}")
    Console().print(table)


if __name__ == "__main__":
    main()
