"""Start-up cost of the command line: `--help` and a lookup on built tables (issue 13).

Runs each command as a whole process, interleaved with a bare ``python -c pass`` (the baseline,
run in the same loop so that a noisy machine slows both), and prints medians, the ratio to the
baseline and the peak memory of each.

    python benchmarks/bench_startup.py            # 7 rounds
    python benchmarks/bench_startup.py --rounds 15
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_once(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one run of ``argv`` as a child process."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: become the command
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        # Users run installed code whose bytecode pip compiled; let the warm-up write it here too.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        os.execvpe(argv[0], argv, env)
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    cli = shutil.which("stb-pipeline") or sys.exit("stb-pipeline is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        subprocess.run(
            [cli, "build", "--variant", "classic", "--data-dir", str(data)],
            check=True,
            capture_output=True,
        )
        commands = {
            "python -c pass (baseline)": [sys.executable, "-c", "pass"],
            "stb-pipeline --help": [cli, "--help"],
            "stb-pipeline expect 123456789": [cli, "expect", "-v", "classic", "123456789", "-d"],
            "stb-pipeline move 12345 7": [cli, "move", "-v", "classic", "12345", "7", "-d"],
        }
        for argv in commands.values():
            if argv[-1] == "-d":
                argv.append(str(data))
        for argv in commands.values():  # warm-up: numba and OS caches
            run_once(argv)
        times: dict[str, list[float]] = {name: [] for name in commands}
        peaks: dict[str, float] = dict.fromkeys(commands, 0.0)
        for _ in range(args.rounds):
            for name, argv in commands.items():
                seconds, peak = run_once(argv)
                times[name].append(seconds)
                peaks[name] = max(peaks[name], peak)
    base = statistics.median(times["python -c pass (baseline)"])
    print(f"{'command':<34} {'median s':>9} {'min s':>7} {'x baseline':>11} {'peak MB':>8}")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"{name:<34} {median:>9.3f} {min(values):>7.3f} {median / base:>11.1f} "
            f"{peaks[name]:>8.0f}"
        )


if __name__ == "__main__":
    main()
