"""The catalog (stb.duckdb): a lookup through it against the same lookup on the variant's file,
and what writing it adds to `build --variant all`.

Lookup: a data directory holding `build --variant all` and a 24-tile box (`build --tiles 24
--objective score`, about a minute; built unless --data-dir already holds it). The same query,
``select * from policy where variant = V and state_id = S`` for --lookups seeded random states
S, runs two ways, each in a fresh process:

- ``own file``: ``read_parquet('variants/V/policy.parquet')`` on an in-memory DuckDB (the baseline);
- ``catalog``: the ``policy`` view of stb.duckdb, opened read-only (it reads every policy file of
  every variant, the box's decoded);

warm (the median query of a process that asked one first), and cold: the `duckdb` command
started for one query, through the catalog (``duckdb -readonly stb.duckdb -c ...``) against the
file (``duckdb -c "... from 'variants/V/policy.parquet' ..."``). Target: at most 2x.

Build: `build --variant all` into a fresh directory, in a fresh process, with the catalog's
writing switched off (the baseline) and on, alternated --repeat times; the build's wall time
each way and, inside the build, the time the catalog took (reading the footers, defining the
views, writing and renaming the file). Target: the catalog adds at most 0.2 s.

Every row prints each process's peak memory; the ratios are printed last.

Usage: python benchmarks/bench_catalog.py [--data-dir DIR] [--lookups N] [--seed S] [--repeat K]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOX = "stb-24t-2d6-score"
BOX_RULES = ["--tiles", "24", "--objective", "score"]
LOOKUP = "select * from {source} where variant = $v and state_id = $s"


def peak_mb() -> float:
    """This process's peak resident memory."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def lookup_child(way: str, data_dir: Path, ids: list[int]) -> dict:
    """Time the lookups of ``ids`` one ``way`` (``own`` or ``catalog``) in this process."""
    import duckdb

    if way == "catalog":
        con = duckdb.connect(str(data_dir / "stb.duckdb"), read_only=True)
        source = "policy"
    else:
        con = duckdb.connect()
        source = f"read_parquet('{data_dir / 'variants' / BOX / 'policy.parquet'}')"
    query = LOOKUP.format(source=source)
    rows = len(con.execute(query, {"v": BOX, "s": ids[0]}).fetchall())  # the warm-up
    times = []
    for s in ids:
        t0 = time.perf_counter()
        rows = len(con.execute(query, {"v": BOX, "s": s}).fetchall())
        times.append(time.perf_counter() - t0)
        assert rows == 11 or s == 0, f"state {s}: {rows} rows"  # a roll of 2..12 each
    con.close()
    times.sort()
    return {"ms": 1000 * times[len(times) // 2], "peak_mb": peak_mb(), "rows": rows}


def build_child(way: str, data_dir: Path) -> dict:
    """`build --variant all` into ``data_dir`` with the catalog written (``with``) or not; the
    wall time, the catalog's own time and the peak memory."""
    from pipeline.cli.app import run
    from pipeline.store import catalog

    spent = [0.0]
    write = catalog.refresh

    def timed(*args: object, **kwargs: object) -> bool:
        t0 = time.perf_counter()
        try:
            return write(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            spent[0] += time.perf_counter() - t0

    catalog.refresh = timed if way == "with" else (lambda *a, **k: False)  # type: ignore
    t0 = time.perf_counter()
    code = run(["build", "--variant", "all", "--data-dir", str(data_dir), "--quiet"])
    seconds = time.perf_counter() - t0
    assert code == 0, f"build exited {code}"
    assert (data_dir / "stb.duckdb").exists() == (way == "with")
    return {"seconds": seconds, "catalog_s": spent[0], "peak_mb": peak_mb()}


def child(mode: str, way: str, data_dir: str, extra: str) -> dict:
    """Run one measurement (called in a fresh process)."""
    if mode == "lookup":
        return lookup_child(way, Path(data_dir), json.loads(extra))
    return build_child(way, Path(data_dir))


def run_child(*args: str) -> dict:
    """One measurement in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STB_QUIET": "1"}
    command = [sys.executable, __file__, "--child", *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"child {args[:2]} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def duckdb_command() -> str:
    """The duckdb command (package duckdb-cli), next to this Python."""
    beside = Path(sys.executable).parent / "duckdb"
    return str(beside) if beside.exists() else (shutil.which("duckdb") or "duckdb")


def command_ms(data_dir: Path, way: str, ids: list[int]) -> float:
    """Median wall time of the duckdb command started for one lookup (process, open, query)."""
    own = data_dir / "variants" / BOX / "policy.parquet"
    times = []
    for s in ids:
        where = f"where variant = '{BOX}' and state_id = {s}"
        if way == "catalog":
            args = [
                "-readonly",
                str(data_dir / "stb.duckdb"),
                "-c",
                f"select * from policy {where}",
            ]
        else:
            args = ["-c", f"select * from '{own}' {where}"]
        t0 = time.perf_counter()
        subprocess.run([duckdb_command(), *args], capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    times.sort()
    return 1000 * times[len(times) // 2]


def ensure_built(data_dir: Path) -> None:
    """`build --variant all` and the 24-tile box into ``data_dir`` (a no-op when built)."""
    for args in (["--variant", "all"], BOX_RULES):
        t0 = time.perf_counter()
        command = [sys.executable, "-m", "pipeline", "build", *args, "--data-dir", str(data_dir)]
        subprocess.run(
            [*command, "--quiet"],
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.DEVNULL,  # its summary table: the run's time is printed instead
        )
        print(f"build {' '.join(args)}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)


def lookups(data_dir: Path, ids: list[int], repeat: int) -> dict[str, float]:
    """The lookup table; the ratios (catalog / own file), warm and cold."""
    warm: dict[str, list[dict]] = {"own": [], "catalog": []}
    for _ in range(repeat):  # A B A B: the shared machine's noise falls on both
        for way in warm:
            warm[way].append(run_child("lookup", way, str(data_dir), json.dumps(ids)))
    cold = {way: [command_ms(data_dir, way, ids[:8]) for _ in range(repeat)] for way in warm}
    print(f"{len(ids)} lookups of {BOX} policy rows (seeded states), {repeat} processes a way")
    print("| way | warm ms/query (median) | peak MB | duckdb command ms (process + query) |")
    print("| --- | --- | --- | --- |")
    med: dict[str, dict[str, float]] = {}
    for way, runs in warm.items():
        runs.sort(key=lambda r: r["ms"])
        r = runs[len(runs) // 2]
        med[way] = {"warm": r["ms"], "cold": sorted(cold[way])[len(cold[way]) // 2]}
        name = "catalog (stb.duckdb)" if way == "catalog" else "own file (baseline)"
        print(f"| {name} | {r['ms']:.2f} | {r['peak_mb']:,.0f} | {med[way]['cold']:.0f} |")
    return {k: med["catalog"][k] / med["own"][k] for k in ("warm", "cold")}


def builds(repeat: int) -> float:
    """The build table; what the catalog adds (seconds, measured inside the build)."""
    found: dict[str, list[dict]] = {"without": [], "with": []}
    for _ in range(repeat):
        for way in found:
            with tempfile.TemporaryDirectory() as tmp:
                found[way].append(run_child("build", way, tmp, ""))
    print(f"build --variant all into a fresh directory, {repeat} processes a way")
    print("| catalog | build s (median) | catalog s inside it (median, min-max) | peak MB |")
    print("| --- | --- | --- | --- |")
    for way, runs in found.items():
        seconds = sorted(r["seconds"] for r in runs)
        spent = sorted(r["catalog_s"] for r in runs)
        peak = max(r["peak_mb"] for r in runs)
        print(
            f"| {way} | {seconds[len(runs) // 2]:.2f} | {spent[len(runs) // 2]:.3f} "
            f"({spent[0]:.3f}-{spent[-1]:.3f}) | {peak:,.0f} |"
        )
    spent = sorted(r["catalog_s"] for r in found["with"])
    return spent[len(spent) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="keep the lookup's tables here (reused)")
    parser.add_argument("--lookups", type=int, default=40, help="states looked up a process")
    parser.add_argument("--seed", type=int, default=33, help="seed of the states looked up")
    parser.add_argument("--repeat", type=int, default=3, help="processes of each way")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    ids = [rng.randrange(1, 1 << 24) for _ in range(args.lookups)]
    print(f"seed {args.seed}")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir or Path(tmp) / "data"
        ensure_built(data_dir)
        ratio = lookups(data_dir, ids, args.repeat)
    print()
    spent = builds(args.repeat)
    print()
    print(f"catalog / own file, warm: {ratio['warm']:.2f}x; duckdb command: {ratio['cold']:.2f}x")
    print(f"writing the catalog in build --variant all: {spent:.3f} s (target <= 0.2 s)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(*sys.argv[2:6])))
    else:
        main()
