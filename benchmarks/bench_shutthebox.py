"""Wall-clock time of `ShutTheBox` on the course assignment's seven examples, from tables
and solving.

Run from the repository root: ``python benchmarks/bench_shutthebox.py [--repeat N]``. The tables
are built for the `two-player` variant into a temporary directory first. Prints a table of the
median wall and CPU (user + system) seconds per call, each a whole process: interpreter start,
imports, answer. On a busy machine the CPU column is the steadier one.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = [
    "--one --expect 123456789",
    "--one --expect 146789",
    "--one --move 146789 9",
    "--two --expect 123456789 8",
    "--two --expect 12345689 41",
    "--two --expect 13456789 43",
    "--two --move 13456789 17 12",
]


def cpu_children() -> float:
    """CPU seconds used so far by finished child processes."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def seconds(args: str, data_dir: Path, repeat: int) -> tuple[float, float, str]:
    """Median wall and CPU time of ``repeat`` runs, and the answer printed."""
    env = {**os.environ, "STB_DATA_DIR": str(data_dir)}
    times, cpu, out = [], [], ""
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), cpu_children()
        done = subprocess.run(
            [sys.executable, "-m", "pipeline.apps.course.command", *args.split()],
            cwd=REPO, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        times.append(time.perf_counter() - t0)
        cpu.append(cpu_children() - c0)
        out = done.stdout.strip()
    return statistics.median(times), statistics.median(cpu), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per example (median)")
    repeat = parser.parse_args().repeat
    with tempfile.TemporaryDirectory() as tmp:
        built, empty = Path(tmp) / "data", Path(tmp) / "empty"
        subprocess.run(
            [sys.executable, "-m", "pipeline", "build", "-v", "two-player", "-d", str(built)],
            cwd=REPO, check=True, capture_output=True,
        )  # fmt: skip
        head = ("tables wall", "tables cpu", "solving wall", "solving cpu")
        print(f"{'arguments':<30} {'answer':>9} " + " ".join(f"{h:>12}" for h in head))
        for args in EXAMPLES:
            wall_t, cpu_t, answer = seconds(args, built, repeat)
            wall_s, cpu_s, answer2 = seconds(args, empty, repeat)
            assert answer == answer2, (args, answer, answer2)
            row = " ".join(f"{x:>12.3f}" for x in (wall_t, cpu_t, wall_s, cpu_s))
            print(f"{args:<30} {answer:>9} {row}")


if __name__ == "__main__":
    main()
