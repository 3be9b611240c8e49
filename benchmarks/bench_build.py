"""Whole builds as a user runs them: `stb-pipeline build ...`, wall seconds and peak memory.

Each command runs as its own process (peak RSS from the kernel's accounting of that process),
beside the plain numpy rank-order solve of the same values (from bench_stream.py, also its own
process) in the same run, so that the ratio holds on a busy machine. Each build writes into a
fresh temporary data directory.

Targets (issue 14): 24 tiles x 3 dice (states + best-move policy) <= 60 s and <= 3 GB; 20 tiles x
2 dice <= 10 s and <= 1 GB; peak memory growing with the states, not the moves (12..24 tiles);
`build --variant all` twice as fast as before (14.5 s) and <= 1 GB.

`--rebuild` times, in turns in the same run, `build --variant all` into an empty data directory
and `build --variant all --force` over the tables it wrote (and a one-variant rebuild over
them), N times each: the rebuild's peak memory against the fresh build's (issue 26: within 1.2
times; it was 1.8 times when the merge decoded every old row).

`--against DIR` times `build --variant all` of another checkout (for example the commit before a
change, `git worktree add /tmp/before <rev>`) in turns with this one, N times each, and prints
the medians and the ratio: the before/after comparison the issue asks for, in one run.

Usage: python benchmarks/bench_build.py [--sizes 12:3,16:3,20:2,20:3,24:3] [--all]
       [--against DIR [--runs N]] [--rebuild [--runs N]]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
DEFAULT_SIZES = "12:3,14:3,16:3,18:3,20:2,20:3,22:3,24:3"


def run_measured(
    argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None
) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one run of ``argv`` as a child process
    (``env``: variables to set in it; ``cwd``: where it runs)."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        if cwd is not None:
            os.chdir(cwd)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        whole = {**os.environ, **(env or {})}
        whole.pop("PYTHONDONTWRITEBYTECODE", None)  # pip compiles an install's bytecode once
        os.execvpe(argv[0], argv, whole)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def built_size(data: Path) -> tuple[int, int]:
    """States and legal moves of every variant built in ``data`` (from its manifest)."""
    import json

    variants = json.loads((data / "manifest.json").read_text())["variants"].values()
    summaries = [v.get("summary", {}) for v in variants]
    return sum(int(x.get("states", 0)) for x in summaries), sum(
        int(x.get("moves", 0)) for x in summaries
    )


def numpy_reference(tiles: int, dice: int) -> list[str]:
    """The command that runs the plain numpy solve of bench_stream.py for one size."""
    code = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); import bench_stream; "
        f"bench_stream.numpy_solve({tiles}, {dice})"
    )
    return [sys.executable, "-c", code]


def compare_all(other: Path, runs: int) -> None:
    """`build --variant all` of this checkout and of ``other``, in turns; medians and ratios."""
    import statistics

    here = HERE.parent
    found: dict[str, list[tuple[float, float, float]]] = {"this checkout": [], str(other): []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs + 1):  # the first round warms the numba caches: not counted
            for name, root in (("this checkout", here), (str(other), other)):
                argv = [sys.executable, "-m", "pipeline", "build", "--variant", "all"]
                data = f"{tmp}/{i}-{len(found[name])}-{root.name}"
                # run from tmp: `python -m` puts the working directory first on sys.path
                # output goes nowhere; STB_QUIET (not --quiet) so that older checkouts run too
                env = {"PYTHONPATH": str(root), "STB_QUIET": "1"}
                figures = run_measured([*argv, "-d", data], env, cwd=tmp)
                shutil.rmtree(data, ignore_errors=True)
                if i:
                    found[name].append(figures)
    table = Table(title=f"build --variant all, median of {runs} runs each", title_justify="left")
    for head in ("checkout", "wall s", "cpu s", "peak MB", "wall ratio", "peak ratio"):
        table.add_column(head, justify="left" if head == "checkout" else "right", no_wrap=True)
    base = [statistics.median(x[k] for x in found[str(other)]) for k in range(3)]
    for name, rows in found.items():
        wall, cpu, peak = (statistics.median(x[k] for x in rows) for k in range(3))
        ratios = (f"{wall / base[0]:.2f}", f"{peak / base[2]:.2f}")
        table.add_row(name, f"{wall:.1f}", f"{cpu:.1f}", f"{peak:,.0f}", *ratios)
    Console(width=max(Console().width, 120)).print(table)


def compare_rebuild(runs: int) -> None:
    """A fresh `build --variant all`, then `--force` over its tables (all variants, and one),
    in turns, ``runs`` times each; medians, and each beside the fresh build of its round."""
    import statistics

    here = HERE.parent
    env = {"PYTHONPATH": str(here), "STB_QUIET": "1"}
    build = [sys.executable, "-m", "pipeline", "build"]
    kinds = {
        "fresh: --variant all, empty dir": ["--variant", "all"],
        "rebuild: --variant all --force": ["--variant", "all", "--force"],
        "rebuild: --variant classic --force": ["--variant", "classic", "--force"],
    }
    found: dict[str, list[tuple[float, float, float]]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs + 1):  # the first round warms the numba caches: not counted
            data = f"{tmp}/{i}"
            for name, args in kinds.items():  # the fresh build first: the others rebuild it
                figures = run_measured([*build, *args, "-d", data], env, cwd=tmp)
                if i:
                    found[name].append(figures)
            shutil.rmtree(data, ignore_errors=True)
    table = Table(
        title=f"rebuild against a fresh build, median of {runs} runs", title_justify="left"
    )
    for head in ("build", "wall s", "cpu s", "peak MB", "wall ratio", "peak ratio"):
        table.add_column(head, justify="left" if head == "build" else "right", no_wrap=True)
    medians = {
        name: [statistics.median(x[k] for x in rows) for k in range(3)]
        for name, rows in found.items()
    }
    base = medians["fresh: --variant all, empty dir"]
    for name, (wall, cpu, peak) in medians.items():
        ratios = (f"{wall / base[0]:.2f}", f"{peak / base[2]:.2f}")
        table.add_row(name, f"{wall:.1f}", f"{cpu:.1f}", f"{peak:,.0f}", *ratios)
    Console(width=max(Console().width, 120)).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="tiles:dice,...")
    parser.add_argument("--all", action="store_true", help="also time `build --variant all`")
    parser.add_argument("--against", help="another checkout: time `build --variant all` in both")
    parser.add_argument("--rebuild", action="store_true", help="a rebuild against a fresh build")
    parser.add_argument("--runs", type=int, default=3, help="runs of each (--against, --rebuild)")
    args = parser.parse_args()
    if args.rebuild:
        compare_rebuild(args.runs)
        return
    if args.against:
        compare_all(Path(args.against), args.runs)
        return
    cli = shutil.which("stb-pipeline") or sys.exit("stb-pipeline is not installed")
    table = Table(title="stb-pipeline build (objective score), whole process", title_justify="left")
    heads = ("build", "states", "moves", "wall s", "cpu s", "peak MB", "numpy wall s", "numpy MB")
    for head in (*heads, "wall ratio"):
        table.add_column(head, justify="left" if head == "build" else "right", no_wrap=True)
    console = Console(width=max(Console().width, 120))  # whole headers in a log too
    with tempfile.TemporaryDirectory() as tmp:
        run_measured([cli, "build", "--tiles", "8", "-d", f"{tmp}/warm"])  # numba caches
        for spec in args.sizes.split(","):
            tiles, dice = (int(x) for x in spec.split(":"))
            data = f"{tmp}/{tiles}x{dice}"
            argv = [cli, "build", "--tiles", str(tiles), "--dice", str(dice)]
            wall, cpu, peak = run_measured([*argv, "--objective", "score", "-d", data])
            states, moves = built_size(Path(data))
            ref_wall, _, ref_peak = run_measured(numpy_reference(tiles, dice))
            table.add_row(
                f"--tiles {tiles} --dice {dice}",
                f"{states:,}",
                f"{moves:,}",
                f"{wall:.1f}",
                f"{cpu:.1f}",
                f"{peak:,.0f}",
                f"{ref_wall:.1f}",
                f"{ref_peak:,.0f}",
                f"{wall / ref_wall:.2f}",
            )
            console.print(f"done: {spec}", style="dim")
            shutil.rmtree(data)
        if args.all:
            wall, cpu, peak = run_measured([cli, "build", "--variant", "all", "-d", f"{tmp}/all"])
            states, moves = built_size(Path(f"{tmp}/all"))
            row = (f"{states:,}", f"{moves:,}", f"{wall:.1f}", f"{cpu:.1f}", f"{peak:,.0f}")
            table.add_row("--variant all", *row, "", "", "")
    console.print(table)


if __name__ == "__main__":
    main()
