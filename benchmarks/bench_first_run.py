"""A person's first command against their second, and a build against its solve alone (issue 40).

``--part first``: each command runs as a process of its own, twice, with one numba cache
directory (``NUMBA_CACHE_DIR``) that is empty before the first run: the first run compiles every
kernel it uses, as the first command after ``pip install .`` does (there the cache is the
``__pycache__`` folders beside the installed modules, empty too); the second loads them. The
commands: ``build --variant all``, ``build --tiles 20 --dice 3 --objective score``,
``benchmark`` (classic, 200,000 games a strategy), ``serve``'s first answers (a box position,
then a full-game Knucklebones position, which the server searches; wall seconds from the
server's start, CPU of its processes) and ``knucklebones solve`` (the full game searched 4
placements deep). Builds write into an empty data directory each run; ``benchmark`` and
``serve`` read a data directory with ``classic`` built beforehand (with a cache of its own).
The columns: wall and CPU seconds of each run, peak memory, and CPU first / second, the figure
that holds on a shared machine (issue 40's targets: at most 1.5 for ``build --variant all``, at
most 2 for the 20 x 3 box).

``--part write``: ``build --tiles 20 --dice 3``, ``--tiles 24 --dice 3`` (objective score) and
``build --variant all``, caches warm, beside the solve alone: the project's streamed solve
(values only, no table) and a plain numpy rank-order solve of the same values
(``bench_stream.numpy_solve``); for ``--variant all``, every variant's graph and its solve, no
table. Each in a process of its own; wall and CPU seconds, peak memory, and the build's wall
over each solve's (issue 40's target: ``--tiles 24 --dice 3`` within 2 times the solve alone,
writing included).

``--base REF_OR_DIR`` (``benchmarks/baseline.py``: main unless told otherwise; ``--no-base``
for none) runs every command of that version too, in the same run (``python -m pipeline`` with
``PYTHONPATH`` its files), each row beside this checkout's.

Usage: python benchmarks/bench_first_run.py [--part first|write|both] [--base REF_OR_DIR]
       [--rounds N] [--sizes 20:3,24:3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import baseline  # noqa: E402
from bench_build import run_measured  # noqa: E402
from bench_serve import free_port, peak_mb, tree_cpu  # noqa: E402

#: (wall s, CPU s, peak MB) of one run.
Figures = tuple[float, float, float]
#: The full game's position the first-answer runs ask for, searched (no tables built).
BOARD = ("44_/1__/___", "2__/___/___", "4")
GAMES = "200000"


def pipeline_argv(*args: str) -> list[str]:
    """``python -m pipeline ARGS`` (run with a checkout on ``PYTHONPATH``, from a temporary
    directory: ``python -m`` puts the working directory first on the path)."""
    return [sys.executable, "-m", "pipeline", *args]


class Checkout:
    """One checkout's commands, each with the numba cache directory it is given."""

    def __init__(self, name: str, root: Path, tmp: Path) -> None:
        self.name, self.root, self.tmp = name, root, tmp
        self.data = tmp / f"classic-{name}"  # classic built: what benchmark and serve read

    def env(self, cache: Path) -> dict[str, str]:
        return {"PYTHONPATH": str(self.root), "STB_QUIET": "1", "NUMBA_CACHE_DIR": str(cache)}

    def run(self, argv: list[str], cache: Path) -> Figures:
        return run_measured(argv, self.env(cache), cwd=str(self.tmp))

    def python(self, code: str, cache: Path) -> Figures:
        return self.run([sys.executable, "-c", code], cache)

    def command(self, label: str, cache: Path) -> list[Figures]:
        """One run of the command ``label`` (of :data:`COMMANDS`): its figures (serve: one
        per answer)."""
        if label == "serve":
            return list(first_answers(self, self.data, cache))
        out = self.tmp / "out"
        args = {
            "build --variant all": ["build", "--variant", "all", "-d", str(out)],
            "build --tiles 20 --dice 3 --objective score": [
                "build", "--tiles", "20", "--dice", "3", "--objective", "score", "-d", str(out)],
            "benchmark (classic, 200,000 games)": [
                "benchmark", "--variant", "classic", "--games", GAMES, "-d", str(self.data)],
            "knucklebones solve (full game, depth 4)": [
                "knucklebones", "solve", *BOARD, "--depth", "4", "-d", str(out)],
        }[label]  # fmt: skip
        try:
            return [self.run(pipeline_argv(*args), cache)]
        finally:
            shutil.rmtree(out, ignore_errors=True)


#: The commands of the first part; "serve" gives two rows (:data:`SERVED`).
COMMANDS = (
    "build --variant all",
    "build --tiles 20 --dice 3 --objective score",
    "benchmark (classic, 200,000 games)",
    "serve",
    "knucklebones solve (full game, depth 4)",
)
SERVED = (
    "serve: first answer, a box position",
    "serve: first answer, a full-game board (searched)",
)


def first_answers(co: Checkout, data: Path, cache: Path) -> tuple[Figures, Figures]:
    """``serve`` from its start: (seconds to the first box answer, its CPU, peak MB) and the
    same to the first full-game Knucklebones answer (searched), CPU of every process."""
    port = free_port()
    start = time.perf_counter()
    server = subprocess.Popen(
        pipeline_argv("serve", "--data-dir", str(data), "--port", str(port)),
        env=baseline.env(co.root, **co.env(cache)), cwd=co.tmp,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        board = quote(f"{BOARD[0]};{BOARD[1]}", safe="")
        found = []
        for path in ("/classic/position.json?id=31&roll=7",
                     f"/knucklebones/position.json?board={board}&die={BOARD[2]}"):  # fmt: skip
            _get_when_up(f"http://127.0.0.1:{port}{path}", server)
            found.append(
                (time.perf_counter() - start, tree_cpu(server.pid), peak_mb(server.pid)[1])
            )
        return found[0], found[1]
    finally:
        server.terminate()
        server.wait(timeout=30)


def _get_when_up(url: str, server: subprocess.Popen) -> None:
    """GET ``url`` (a 200 wanted), retrying while the server is starting."""
    for _ in range(1200):
        if server.poll() is not None:
            raise SystemExit(f"error: the server stopped (exit {server.returncode})")
        try:
            with urllib.request.urlopen(url, timeout=120) as answer:
                answer.read()
                return
        except ConnectionError:
            time.sleep(0.05)
        except urllib.error.URLError as exc:
            if not isinstance(exc.reason, ConnectionError):
                raise
            time.sleep(0.05)
    raise SystemExit(f"error: no answer from {url}")


def first_part(
    checkouts: list[Checkout], tmp: Path, rounds: int, console: Console, only: str = ""
) -> None:
    """First run against second run of each command (those whose label holds ``only``), each
    checkout."""
    rows: dict[tuple[str, str], list[tuple[Figures, Figures]]] = {}
    for co in checkouts:
        co.run(pipeline_argv("build", "--variant", "classic", "-d", str(co.data)),
               tmp / f"setup-cache-{co.name}")  # fmt: skip
    for r in range(rounds):
        for label in (c for c in COMMANDS if only in c):
            for co in checkouts:
                cache = tmp / f"cache-{co.name}"
                shutil.rmtree(cache, ignore_errors=True)  # empty: the first run compiles
                first, second = co.command(label, cache), co.command(label, cache)
                shutil.rmtree(cache, ignore_errors=True)
                names = SERVED if label == "serve" else (label,)
                for name, f, s in zip(names, first, second, strict=True):
                    rows.setdefault((name, co.name), []).append((f, s))
                console.print(f"done: {co.name}: {label} (round {r + 1})", style="dim")
    table = Table(title=f"first run (empty numba cache) against second run, median of {rounds}",
                  title_justify="left")  # fmt: skip
    heads = ("command", "checkout", "first wall s", "first CPU s", "second wall s",
             "second CPU s", "peak MB", "CPU first / second")  # fmt: skip
    for head in heads:
        table.add_column(head, justify="left" if head in ("command", "checkout") else "right")
    for (label, name), found in rows.items():
        f = [statistics.median(x[0][k] for x in found) for k in range(3)]
        s = [statistics.median(x[1][k] for x in found) for k in range(3)]
        table.add_row(label, name, f"{f[0]:.1f}", f"{f[1]:.1f}", f"{s[0]:.1f}", f"{s[1]:.1f}",
                      f"{max(f[2], s[2]):,.0f}", f"{f[1] / s[1]:.2f}")  # fmt: skip
    console.print(table)


def write_part(
    checkouts: list[Checkout], tmp: Path, rounds: int, sizes: list[tuple[int, int]],
    console: Console,
) -> None:  # fmt: skip
    """Builds beside the solve alone, caches warm."""
    caches = {co.name: tmp / f"warm-cache-{co.name}" for co in checkouts}
    for co in checkouts:  # the caches warmed: every kernel these runs use, compiled once
        for args in (
            ["--tiles", "12", "--dice", "3", "--objective", "score"],
            ["--variant", "all"],
        ):
            co.run(pipeline_argv("build", *args, "-d", str(tmp / "warm")), caches[co.name])
            shutil.rmtree(tmp / "warm", ignore_errors=True)
        co.python(streamed_solve(8, 3), caches[co.name])
        co.python(SOLVE_ALL, caches[co.name])
    cases = [(f"--tiles {t} --dice {d}", ["--tiles", str(t), "--dice", str(d), "--objective",
              "score"], streamed_solve(t, d), numpy_solve(t, d)) for t, d in sizes]  # fmt: skip
    cases.append(("--variant all", ["--variant", "all"], SOLVE_ALL, None))
    table = Table(title=f"build (tables written) beside the solve alone, caches warm, median of "
                  f"{rounds}", title_justify="left")  # fmt: skip
    heads = ("build", "checkout", "build wall s", "build CPU s", "build MB", "solve wall s",
             "solve CPU s", "solve MB", "numpy wall s", "numpy CPU s", "numpy MB",
             "build / solve", "build / numpy")  # fmt: skip
    for head in heads:
        table.add_column(head, justify="left" if head in ("build", "checkout") else "right")
    for label, args, solve_code, numpy_code in cases:
        here = checkouts[0]
        numpy = None
        if numpy_code is not None:  # the same code whichever checkout: run once
            numpy = median([here.python(numpy_code, caches[here.name]) for _ in range(rounds)])
        for co in checkouts:
            builds, solves = [], []
            for _ in range(rounds):
                data = tmp / "write-data"
                builds.append(co.run(pipeline_argv("build", *args, "-d", str(data)),
                                     caches[co.name]))  # fmt: skip
                shutil.rmtree(data, ignore_errors=True)
                solves.append(co.python(solve_code, caches[co.name]))
            b, s = median(builds), median(solves)
            n = ("", "", "") if numpy is None else (f"{numpy[0]:.1f}", f"{numpy[1]:.1f}",
                                                     f"{numpy[2]:,.0f}")  # fmt: skip
            table.add_row(label, co.name, f"{b[0]:.1f}", f"{b[1]:.1f}", f"{b[2]:,.0f}",
                          f"{s[0]:.1f}", f"{s[1]:.1f}", f"{s[2]:,.0f}", *n, f"{b[0] / s[0]:.2f}",
                          "" if numpy is None else f"{b[0] / numpy[0]:.2f}")  # fmt: skip
            console.print(f"done: {co.name}: build {label}", style="dim")
    console.print(table)


#: Every variant of ``build --variant all``: its graph and its solve, no table.
SOLVE_ALL = (
    "from pipeline.games.registry import resolve\n"
    "from pipeline.solve.rank_order import solve_rank_order\n"
    "from pipeline.solve.value_iteration import solve_value_iteration\n"
    "for v in resolve(['all']):\n"
    "    g = v.make().graph()\n"
    "    (solve_value_iteration if g.cyclic else solve_rank_order)(g)\n"
)


def streamed_solve(tiles: int, dice: int) -> str:
    """The project's streamed solve of a box (objective score), values only, no table."""
    return (
        "from pipeline.games.shutbox.rules import RuleSet\n"
        "from pipeline.games.shutbox.stream import StreamSolver\n"
        f"StreamSolver(RuleSet(tiles={tiles}, dice={dice}, objective='score')).solve()\n"
    )


def numpy_solve(tiles: int, dice: int) -> str:
    """The plain numpy rank-order solve of bench_stream.py."""
    return (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); import bench_stream; "
        f"bench_stream.numpy_solve({tiles}, {dice})"
    )


def median(runs: list[Figures]) -> Figures:
    """Each figure's median over ``runs``."""
    wall, cpu, peak = (statistics.median(x[k] for x in runs) for k in range(3))
    return wall, cpu, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("first", "write", "both"), default="both")
    baseline.add_options(parser)
    parser.add_argument("--rounds", type=int, default=1, help="runs of each (medians)")
    parser.add_argument("--sizes", default="20:3,24:3", help="tiles:dice of --part write")
    parser.add_argument("--only", default="", help="--part first: the commands whose name holds it")
    args = parser.parse_args()
    sizes = [(int(a), int(b)) for a, b in (x.split(":") for x in args.sizes.split(","))]
    console = Console(width=max(Console().width, 160))  # whole headers in a log too
    with tempfile.TemporaryDirectory(prefix="stb-first-run-") as name:
        tmp = Path(name)
        checkouts = [Checkout("this", REPO, tmp)]
        base = baseline.checkout(args)
        if base is not None:
            checkouts.append(Checkout(baseline.label(base), base, tmp))
        if args.part in ("first", "both"):
            first_part(checkouts, tmp, args.rounds, console, args.only)
        if args.part in ("write", "both"):
            write_part(checkouts, tmp, args.rounds, sizes, console)


if __name__ == "__main__":
    main()
