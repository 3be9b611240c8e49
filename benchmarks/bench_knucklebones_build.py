"""Knucklebones boards through `stb-pipeline build`: the graph-free build against the graph's.

Each variant is built twice, each time by a fresh process into its own temporary data directory:
``streamed`` is today's build (the board is stored on its own, so `build` takes the game's
stream hook: the exact solver of games/knucklebones/exact/cpu.py and the tables written a block of
states at a time), ``graph`` the same command with the stream hook disabled (the whole game
graph, solved by the graph value iteration: the build before issue 17's stream hook). Peak is
each process's own maximum resident memory (``os.wait4``). On this machine (2 shared cores) the
graph builds of knucklebones-3x2 and knucklebones-3x3-d4 take 3 to 6 minutes and about 7 GB each.

Usage: python benchmarks/bench_knucklebones_build.py [VARIANT ...] [--no-graph]
       (default: knucklebones-2x3 knucklebones-3x2)
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

DEFAULT = ["knucklebones-2x3", "knucklebones-3x2"]
#: The graph path: the CLI with the Knucklebones stream hook returning None.
GRAPH_PATH = (
    "import sys; from pipeline.games.knucklebones.exact.stream import StreamedKnucklebones as K; "
    "K.stream = lambda self, *a: None; "
    "from pipeline.cli.app import main; sys.argv[0] = 'stb-pipeline'; main()"
)


def build(variant: str, data_dir: Path, graph: bool) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak resident GB of one `build --variant` child process."""
    env = {**os.environ, "COLUMNS": "200", "STB_QUIET": "1"}
    head = ["-c", GRAPH_PATH] if graph else ["-m", "pipeline"]
    t0 = time.perf_counter()
    # wait4 gives this child's own peak (RUSAGE_CHILDREN would be the largest child so far)
    proc = subprocess.Popen(
        [sys.executable, *head, "build", "--variant", variant, "--force",
         "--data-dir", str(data_dir)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"build of {variant} failed")
    # ru_maxrss is in KiB on Linux; CPU time shows how much of the shared cores the child got
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="*", default=DEFAULT)
    parser.add_argument("--no-graph", action="store_true", help="skip the graph builds")
    args = parser.parse_args()
    table = Table(title="stb-pipeline build, one process per variant and path")
    for col in ("variant", "streamed s", "cpu s", "peak GB", "graph s", "cpu s ", "peak GB ",
                "time ratio", "cpu ratio"):  # fmt: skip
        table.add_column(col, justify="left" if col == "variant" else "right")
    with tempfile.TemporaryDirectory() as tmp:
        for variant in progress.tracked(args.variants, "building", unit="variants"):
            new = build(variant, Path(tmp) / f"{variant}-streamed", graph=False)
            old = None if args.no_graph else build(variant, Path(tmp) / f"{variant}-graph", True)
            table.add_row(
                variant, f"{new[0]:.0f}", f"{new[1]:.0f}", f"{new[2]:.2f}",
                f"{old[0]:.0f}" if old else "-", f"{old[1]:.0f}" if old else "-",
                f"{old[2]:.2f}" if old else "-",
                f"{new[0] / old[0]:.2f}" if old else "-", f"{new[1] / old[1]:.2f}" if old else "-",
            )  # fmt: skip
    Console().print(table)


if __name__ == "__main__":
    main()
