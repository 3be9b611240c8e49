"""Writing the full Knucklebones game's lean states table: rows a second, bytes a row, memory.

The full game's build (`build --variant knucklebones --device cuda`) streams 4,812,987,894 values
per objective from the GPU to Parquet, so the writer, not the GPU, sets the build's time. This
times the build's own writer (:func:`pipeline.store.stream_writer.write_streamed_many`, with the
lean table's options and constants) on ROWS random float32 values in [0, 1) (the worst case for
compression: the real tables repeat 0, 1/2 and 1 often) in two layouts, each in a fresh process:

- ``lean``: today's table, the columns of
  :data:`pipeline.games.knucklebones.exact.stream.LEAN_COLUMNS` only, written as required columns;
- ``shared``: the same rows in every column of the shared ``states`` schema, nullable, the 29
  others null (the table before this layout: the baseline, in the same run).

It prints rows a second, bytes on disk a row, each process's peak memory, the ratio, and the time
both objectives of the full game would take at that rate (one writer thread per table).

Usage: python benchmarks/bench_lean_write.py [--rows N] [--repeat K]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FULL_GAME = 4_812_987_894


def child(layout: str, rows: int) -> dict:
    """Write ``rows`` lean rows in ``layout`` to a temporary file; the measurements."""
    import numpy as np

    from pipeline.games.knucklebones.exact.stream import (
        LEAN_COLUMNS,
        LEAN_ROWS,
        lean_states_options,
    )
    from pipeline.stages.streamed import written_schema
    from pipeline.store import stream_writer

    # the schema the build writes: the lean columns (required), or every column (nullable)
    sch = written_schema("states", LEAN_COLUMNS if layout == "lean" else None, {})
    constants = {
        **dict.fromkeys(sch.names),
        "variant": "knucklebones",
        "objective": "wins",
        "maximise": True,
        "residual": 2e-9,
    }
    rng = np.random.default_rng(23)
    # four distinct batches of values, reused: the producer stays cheap beside the writer
    pool = rng.random((4, LEAN_ROWS), dtype=np.float32).astype(np.float64)

    def batches():
        for k, a in enumerate(range(0, rows, LEAN_ROWS)):
            b = min(a + LEAN_ROWS, rows)
            yield {"states": {"state_id": np.arange(a, b), "value": pool[k % 4, : b - a]}}

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "states.parquet"
        t0 = time.perf_counter()
        stream_writer.write_streamed_many(
            {"states": path}, batches(), {"states": sch}, {"states": constants},
            {"states": lean_states_options()},
        )  # fmt: skip
        seconds = time.perf_counter() - t0
        size = path.stat().st_size
    return {
        "seconds": seconds,
        "bytes_per_row": size / rows,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "columns": len(sch.names),
    }


def run_child(layout: str, rows: int) -> dict:
    """One measurement in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, __file__, "--child", layout, str(rows)]
    run = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=24 << 20, help="rows a run (default 24 Mi)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each layout, alternated")
    args = parser.parse_args()
    found: dict[str, list[dict]] = {"lean": [], "shared": []}
    for _ in range(args.repeat):  # A B A B: the shared machine's noise falls on both
        for layout in found:
            found[layout].append(run_child(layout, args.rows))
    print(f"{args.rows:,} rows a run, {args.repeat} runs each, the median run shown")
    print("| layout | columns | M rows/s | bytes/row | peak MB | both objectives, full game |")
    print("| --- | --- | --- | --- | --- | --- |")
    rate = {}
    for layout, runs in found.items():
        runs.sort(key=lambda r: r["seconds"])
        r = runs[len(runs) // 2]
        rate[layout] = args.rows / r["seconds"]
        minutes, gb = 2 * FULL_GAME / rate[layout] / 60, 2 * FULL_GAME * r["bytes_per_row"] / 1e9
        print(
            f"| {layout} | {r['columns']} | {rate[layout] / 1e6:.1f} | {r['bytes_per_row']:.2f} "
            f"| {r['peak_mb']:,.0f} | {minutes:.1f} min, {gb:.0f} GB |"
        )
    print(f"lean / shared rows a second: {rate['lean'] / rate['shared']:.2f}x")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], int(sys.argv[3]))))
    else:
        main()
