"""Issue 31's GPU session, ready to run in one go on a lent GPU machine (H100 or H200).

Such a machine has numpy, numba, numba-cuda, pyarrow, typer, rich and filelock, but not polars or
duckdb, and no network; the repository travels as a working tree (no install: every command runs
as ``python -m pipeline`` with the checkout on ``PYTHONPATH``). DuckDB, for step 2's queries, can
come as a wheel carried in ``.whl/`` (docs/knucklebones-full-game.md says how to fetch it); it is
installed into /tmp/stb-site when found there. Steps:

- ``preflight`` (seconds): the Python, the packages found and missing, the GPU and its memory.
- ``step1`` (about 5 minutes): ``bench_knucklebones_gpu.py 3x2 3x3d4 3x3d5`` (the GPU beside
  the CPU solver, their values compared on every state of 3x2 and 3x3-d4 within twice the
  tolerance), then ``knucklebones solve-exact --columns 3 --rows 3 --device cuda`` for both
  objectives.
- ``step2`` (at most ``--budget`` seconds, 560 by default): ``build --variant knucklebones
  [--variant knucklebones-score] --device cuda`` (the score objective only when the time left
  fits it, else the summary says so), ``knucklebones check-tables``, the first-player, openings
  and perfect-loss queries, one ``knucklebones solve`` lookup, the bytes on disk.
- ``dry``: both steps here, on tiny boards, under numba's CUDA simulator, with polars, duckdb and
  matplotlib refused (benchmarks/gpu_dry/sitecustomize.py): what proves this script before the
  GPU time is spent (``just gpu-session-dry``; a few minutes). The tables are written by 16
  threads (``$STB_WRITE_THREADS``), as on a GPU machine's 16 cores, in many small row groups;
  the first objective is built again with one writer thread, and its files must be the same
  bytes.

Every command runs in a process of its own, its output in OUT/STEP.log, with its wall time, its
peak host memory (``wait4``) and the GPU's peak memory (``nvidia-smi``, sampled every 200 ms).
OUT/STEP.md is the summary table (rewritten after every command, so that a run cut short still
reports what it did) and OUT/STEP.json the same as data: three files a step, within what a device
call brings back. Exit status: 0 when every command and check passed, 1 otherwise.

Usage: python benchmarks/gpu_session.py {preflight,step1,step2,dry} [--out DIR] [--data DIR]
                                        [--budget SECONDS] [--objectives wins,score]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WHEELS = ROOT / ".whl"
SITE = Path("/tmp/stb-site")
#: The packages a GPU machine has, and those it lacks (issue 31).
NEEDED = ("numpy", "numba", "numba_cuda", "pyarrow", "typer", "rich", "filelock")
ABSENT = ("polars", "duckdb", "matplotlib")
TOLERANCE = 1e-11
#: Writer threads in the dry run: a GPU machine's cores.
DRY_WRITERS = 16


@dataclass(frozen=True)
class Boards:
    """The boards and positions of one kind of run: the GPU's, or the dry run's."""

    bench: tuple[str, ...]  # bench_knucklebones_gpu.py boards
    solve: tuple[str, ...]  # solve-exact options
    check: tuple[str, ...]  # check-tables options
    lookup: tuple[str, ...]  # knucklebones solve BOARD1 BOARD2 DIE


REAL = Boards(
    bench=("3x2", "3x3d4", "3x3d5"),
    solve=("--columns", "3", "--rows", "3", "--faces", "6"),
    check=("--columns", "3", "--rows", "3", "--faces", "6", "--samples", "100", "--seed", "7"),
    lookup=("44_/1__/___", "2__/___/___", "4"),
)
#: The dry run's stand-ins: `knucklebones` and `knucklebones-score` are 2x2 boards with a d2
#: there (benchmarks/gpu_dry/sitecustomize.py), solve-exact runs 2x1 with a d2.
DRY = Boards(
    bench=("2x2d3",),
    solve=("--columns", "2", "--rows", "1", "--faces", "2"),
    check=("--columns", "2", "--rows", "2", "--faces", "2", "--samples", "50", "--seed", "7"),
    lookup=("1_/__", "2_/__", "2"),
)


@dataclass
class Ran:
    """One command of the session and what it cost."""

    name: str
    command: list[str]
    code: int | None = None
    seconds: float = 0.0
    host_peak_mb: float = 0.0
    gpu_peak_mib: float | None = None
    notes: list[str] = field(default_factory=list)


class Session:
    """The commands of one step, their log and their summary."""

    def __init__(self, step: str, out: Path, dry: bool, budget: float) -> None:
        self.step, self.out, self.dry = step, out, dry
        self.deadline = time.monotonic() + budget
        self.ran: list[Ran] = []
        self.checks: list[tuple[str, bool]] = []
        out.mkdir(parents=True, exist_ok=True)
        self.log = (out / f"{step}.log").open("a", buffering=1)
        self.env = dict(os.environ, PYTHONUNBUFFERED="1")
        paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        if SITE.is_dir():
            paths.insert(0, str(SITE))
        if dry:  # the simulator, what a GPU machine lacks refused, its 16 writer threads
            paths.insert(0, str(ROOT / "benchmarks" / "gpu_dry"))
            self.env["NUMBA_ENABLE_CUDASIM"] = "1"
            self.env.setdefault("STB_WRITE_THREADS", str(DRY_WRITERS))
        self.env["PYTHONPATH"] = os.pathsep.join(paths)

    def left(self) -> float:
        """Seconds left of the step's budget."""
        return self.deadline - time.monotonic()

    def run(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Ran:
        """Run one command (killed when the budget runs out), logged and measured."""
        ran = Ran(name, args)
        self.log.write(f"\n===== {name}: {' '.join(args)}\n")
        gpu = GpuMemory()
        t0 = time.perf_counter()
        child = subprocess.Popen(
            args, cwd=ROOT, env=env or self.env, stdout=self.log, stderr=subprocess.STDOUT
        )
        timer = threading.Timer(max(self.left(), 1.0), child.kill)
        timer.start()
        _, status, usage = os.wait4(child.pid, 0)
        timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        ran.seconds = time.perf_counter() - t0
        ran.code = child.returncode
        ran.host_peak_mb = usage.ru_maxrss / 1024
        ran.gpu_peak_mib = gpu.stop()
        if ran.code != 0 and self.left() <= 1.0:
            ran.notes.append("killed: the step's budget ran out")
        self.log.write(f"===== {name}: exit {ran.code}, {ran.seconds:.1f} s\n")
        self.ran.append(ran)
        self.write()
        return ran

    def pipeline(self, name: str, *args: str) -> Ran:
        """``python -m pipeline ARGS`` (the CLI, as `stb-pipeline` would run it)."""
        return self.run(name, [sys.executable, "-m", "pipeline", *args])

    def check(self, what: str, ok: bool) -> None:
        """Record a verdict of the step."""
        self.checks.append((what, ok))
        self.log.write(f"===== check: {'ok' if ok else 'FAILED'}: {what}\n")
        self.write()

    def ok(self) -> bool:
        return all(r.code == 0 for r in self.ran) and all(ok for _, ok in self.checks)

    def write(self) -> None:
        """OUT/STEP.md and OUT/STEP.json, as they stand."""
        lines = [
            f"# {self.step}{' (dry run: simulator, tiny boards)' if self.dry else ''}",
            "",
            "| command | exit | seconds | host peak MB | GPU peak MiB | notes |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for r in self.ran:
            gpu = "-" if r.gpu_peak_mib is None else f"{r.gpu_peak_mib:,.0f}"
            lines.append(
                f"| {r.name} | {r.code} | {r.seconds:.1f} | {r.host_peak_mb:,.0f} | {gpu} | "
                f"{'; '.join(r.notes)} |"
            )
        lines += ["", *(f"- {'ok' if ok else 'FAILED'}: {what}" for what, ok in self.checks)]
        (self.out / f"{self.step}.md").write_text("\n".join(lines) + "\n")
        data = {"dry": self.dry, "ran": [asdict(r) for r in self.ran], "checks": self.checks}
        (self.out / f"{self.step}.json").write_text(json.dumps(data, indent=1))


class GpuMemory:
    """The GPU's largest memory in use while a command runs (nvidia-smi every 200 ms; None
    without nvidia-smi, as under the simulator)."""

    def __init__(self) -> None:
        self.peak: float | None = None
        tool = shutil.which("nvidia-smi")
        self.proc = None
        if tool is not None:
            query = [tool, "--query-gpu=memory.used", "--format=csv,noheader,nounits"]
            self.proc = subprocess.Popen([*query, "-lms", "200"], stdout=subprocess.PIPE, text=True)
            self.reader = threading.Thread(target=self._read, daemon=True)
            self.reader.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                value = float(line.split(",")[0])
            except ValueError:
                continue
            self.peak = value if self.peak is None else max(self.peak, value)

    def stop(self) -> float | None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()
        return self.peak


def preflight(s: Session) -> bool:
    """What this machine has: Python, the packages, the GPU; whether the GPU can be used."""
    code = (
        "import importlib, sys\n"
        "print(sys.version.split()[0], sys.executable)\n"
        f"for name in {NEEDED + ABSENT!r}:\n"
        "    try:\n"
        "        m = importlib.import_module(name)\n"
        "        print(name, getattr(m, '__version__', '?'))\n"
        "    except Exception as e:\n"
        "        print(name, 'missing:', type(e).__name__)\n"
        "from pipeline.games.knucklebones.exact import gpu\n"
        "cuda = gpu.cuda_module()\n"
        "dev = cuda.get_current_device()\n"
        "name = getattr(dev, 'name', b'the CUDA simulator')\n"
        "name = name.decode() if isinstance(name, bytes) else name\n"
        "cc = getattr(dev, 'compute_capability', '-')\n"
        "print('gpu', name, 'compute capability', cc, gpu.free_memory(cuda) / 2**30, 'GiB free')\n"
        # a real compile and launch: numba-cuda 0.30 imports under numpy 2.5 but fails at the
        # first launch (np.row_stack), which the carried wheels then mend
        "from pipeline.games.knucklebones.game import KnuckleRules\n"
        "sol = gpu.solve(KnuckleRules(2, 1, 2, 'wins'))\n"
        "print('a 2x1 board with a d2 solved on it:', sol.sweeps, 'sweeps', sol.value_of(0))\n"
    )
    ran = s.run("packages and the GPU", [sys.executable, "-c", code])
    alt = sorted((WHEELS / "alt").glob("*.whl"))
    if ran.code != 0 and alt and not s.dry:
        # the image's numba-cuda cannot run the kernels: the versions this project was tested
        # with, carried as wheels (numba-cuda 0.30.4 and numpy 2.4, which it needs)
        s.run("pip install numba-cuda, numpy (carried)", [sys.executable, "-m", "pip", "install",
              "-q", "--no-index", "--no-deps", "--target", str(SITE), *map(str, alt)])  # fmt: skip
        s.env["PYTHONPATH"] = os.pathsep.join([str(SITE), s.env["PYTHONPATH"]])
        ran = s.run("packages and the GPU, again", [sys.executable, "-c", code])
    if shutil.which("nvidia-smi"):
        s.run("nvidia-smi", ["nvidia-smi"])
    return ran.code == 0


def step1(s: Session, boards: Boards) -> None:
    """The benchmark beside the CPU, and (step1 alone) solve-exact of the full game for both
    objectives."""
    found = s.out / "bench.json"
    env = dict(s.env)
    env.pop("NUMBA_ENABLE_CUDASIM", None)  # the benchmark runs its own simulator check
    bench = [sys.executable, "benchmarks/bench_knucklebones_gpu.py", *boards.bench, "--no-ptx"]
    s.run("bench-knucklebones-gpu", [*bench, "--tolerance", str(TOLERANCE), "--json", str(found)],
          env=env)  # fmt: skip
    if found.exists():
        data = json.loads(found.read_text())
        for row in data["rows"]:
            if row["max_diff"] is not None:  # both solvers ran: every state compared
                bound = 2 * row["tolerance"]
                s.check(
                    f"{row['board']}: max |GPU - CPU| {row['max_diff']:.2e} <= {bound:g} on "
                    f"every one of {row['gpu']['positions']:,} states",
                    row["max_diff"] <= bound,
                )
        for row in data["rows"]:
            for side in ("gpu", "cpu"):
                if row[side] and "error" in row[side]:
                    s.check(f"{row['board']} on the {side.upper()}: {row[side]['error']}", False)
        if s.dry:
            s.check("the benchmark ran (on the simulator: a dry run)", bool(data["rows"]))
        else:
            s.check("the benchmark ran on the GPU, not the simulator", not data["simulated"])
    if s.step == "step1":
        solve_exact(s, boards)


def solve_exact(s: Session, boards: Boards, need: float = 0.0) -> None:
    """``knucklebones solve-exact`` of the full game on the GPU, both objectives (each only
    when more than ``need`` seconds are left: in step ``all`` these come last, the build having
    solved both already)."""
    for objective in ("wins", "score"):
        if s.left() < need:
            s.check(f"solve-exact {objective} not run: {s.left():.0f} s left", False)
            return
        ran = s.pipeline(f"solve-exact {objective}", "knucklebones", "solve-exact",
                         *boards.solve, "--objective", objective, "--device", "cuda",
                         "--tolerance", str(TOLERANCE))  # fmt: skip
        ran.notes.append(last_lines(s, 2))
        s.write()


def step2(s: Session, boards: Boards, data: Path, objectives: list[str]) -> None:
    """The full game's tables, their checks, the queries, a lookup, the bytes on disk."""
    query_env = duckdb_env(s)
    names = {"wins": "knucklebones", "score": "knucklebones-score"}
    built: list[str] = []
    for objective in objectives:
        if built and s.left() < 1.2 * s.ran[-1].seconds + 90:
            s.check(
                f"{names[objective]} not built: {s.left():.0f} s left, the last build took "
                f"{s.ran[-1].seconds:.0f} s (build it in a run of its own, same --data)",
                False,
            )
            break
        ran = s.pipeline(f"build {names[objective]}", "build", "--variant", names[objective],
                         "--device", "cuda", "-d", str(data))  # fmt: skip
        ran.notes.append(last_lines(s, 1))
        if ran.code == 0:
            built.append(objective)
    if s.dry and built:
        one_writer(s, data, names[built[0]])
    both = set(built) | {o for o in ("wins", "score") if (data / "variants" / names[o]).is_dir()}
    if both >= {"wins", "score"}:
        s.pipeline("check-tables", "knucklebones", "check-tables", *boards.check, "-d", str(data))
        s.ran[-1].notes.append(last_lines(s, 3))
        t0 = time.perf_counter()
        looked = s.pipeline("knucklebones solve (lookup)", "knucklebones", "solve",
                            *boards.lookup, "-v", "knucklebones", "-d", str(data))  # fmt: skip
        looked.notes.append(f"{time.perf_counter() - t0:.2f} s with the start-up")
        s.check("the lookup is exact, from the tables", "from tables" in last_lines(s, 8))
        if query_env is not None:
            for query in ("knucklebones_first_player", "knucklebones_openings",
                          "knucklebones_perfect_loss"):  # fmt: skip
                s.run(f"query {query}", [sys.executable, "-m", "pipeline", "query", query,
                      "--variant", "knucklebones", "--format", "csv", "-d", str(data)],
                      env=query_env)  # fmt: skip
        else:
            s.check("the queries: no DuckDB here (carry its wheel in .whl/)", False)
    sizes = {p.name: du(p) for p in sorted((data / "variants").glob("knucklebones*"))}
    for name, size in sizes.items():
        s.check(f"bytes on disk, {name}: {size:,} ({size / 2**30:.2f} GiB)", True)


def one_writer(s: Session, data: Path, name: str) -> None:
    """The dry run's rehearsal of the writer on many cores: ``name`` built again with one
    writer thread, into a directory of its own; its files must be the bytes the session's
    writer threads wrote, row group for row group."""
    import hashlib

    import pyarrow.parquet as pq

    other = data.parent / f"{data.name}-one-writer"
    shutil.rmtree(other, ignore_errors=True)
    env = dict(s.env, STB_WRITE_THREADS="1")
    ran = s.run(f"build {name} (one writer thread)", [sys.executable, "-m", "pipeline", "build",
                "--variant", name, "--device", "cuda", "-d", str(other)], env=env)  # fmt: skip
    if ran.code != 0:
        return
    files = sorted((data / "variants" / name).glob("*.parquet"))
    same = all(
        hashlib.sha256(f.read_bytes()).digest()
        == hashlib.sha256((other / "variants" / name / f.name).read_bytes()).digest()
        for f in files
    )
    groups = sum(pq.ParquetFile(f).metadata.num_row_groups for f in files)
    threads = s.env.get("STB_WRITE_THREADS")
    s.check(f"{name}: {len(files)} files, {groups} row groups, the same bytes from {threads} "
            "writer threads as from one", bool(files) and same)  # fmt: skip
    shutil.rmtree(other, ignore_errors=True)


def duckdb_env(s: Session) -> dict[str, str] | None:
    """The environment the queries run in, with DuckDB (installed from a carried wheel if need
    be; in the dry run, let in as the wheel would be); None when there is none."""
    if s.dry:  # the wheel carried: DuckDB imports, polars still does not
        return dict(s.env, STB_WITHOUT="polars,matplotlib")
    probe = [sys.executable, "-c", "import duckdb"]
    if subprocess.run(probe, env=s.env, capture_output=True).returncode == 0:
        return s.env
    wheels = sorted(WHEELS.glob("duckdb-*.whl"))
    if not wheels:
        return None
    s.run("pip install duckdb (carried)", [sys.executable, "-m", "pip", "install", "-q",
          "--no-index", "--no-deps", "--target", str(SITE), str(wheels[-1])])  # fmt: skip
    env = dict(s.env, PYTHONPATH=os.pathsep.join([str(SITE), s.env["PYTHONPATH"]]))
    return env if subprocess.run(probe, env=env, capture_output=True).returncode == 0 else None


def last_lines(s: Session, n: int) -> str:
    """The last ``n`` lines of the step's log before its closing line, joined."""
    s.log.flush()
    lines = (s.out / f"{s.step}.log").read_text().splitlines()
    body = [line for line in lines if not line.startswith("=====")]
    return " / ".join(line.strip() for line in body[-n:])


def du(path: Path) -> int:
    """Bytes of the files under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("preflight", "step1", "step2", "all", "dry"))
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-session")))
    parser.add_argument("--data", type=Path, default=Path("/tmp/stb-gpu-data"))
    parser.add_argument("--budget", type=float, default=560.0, help="seconds for the step")
    parser.add_argument("--objectives", default="wins,score")
    args = parser.parse_args()
    objectives = [o.strip() for o in args.objectives.split(",") if o.strip()]
    if args.step == "dry":  # the session as run on the GPU (step all), on tiny boards
        data = args.out / "data"
        shutil.rmtree(data, ignore_errors=True)
        s = Session("all", args.out, dry=True, budget=args.budget)
        run_step(s, "all", DRY, data, objectives)
        print(f"all: {'ok' if s.ok() else 'FAILED'} ({args.out / 'all.md'})")
        return 0 if s.ok() else 1
    s = Session(args.step, args.out, dry=False, budget=args.budget)
    run_step(s, args.step, REAL, args.data, objectives)
    print((args.out / f"{args.step}.md").read_text())
    return 0 if s.ok() else 1


def run_step(s: Session, step: str, boards: Boards, data: Path, objectives: list[str]) -> None:
    if step == "preflight":
        preflight(s)
    elif step == "step1":
        step1(s, boards)
    elif step == "step2":
        step2(s, boards, data, objectives)
    else:  # all: the whole session in one call, in order of worth; what the budget cuts, last
        if not preflight(s):
            s.check("no GPU this script can use: stopped after the preflight", False)
            return
        step1(s, boards)
        step2(s, boards, data, objectives)
        solve_exact(s, boards, need=0.0 if s.dry else 100.0)


if __name__ == "__main__":
    sys.exit(main())
