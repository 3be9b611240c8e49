"""The GPU solver under numba's CUDA simulator, against the CPU solver, in one process.

Run by tests/games/knucklebones/test_knucklebones_gpu.py as ``NUMBA_ENABLE_CUDASIM=1 python -m
tests.support.knucklebones_gpu_sim OUT_DIR`` (the simulator must be on before numba is
imported, so it runs in a process of its own); prints one JSON object of findings.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def main(out_dir: Path) -> dict:
    import pyarrow.parquet as pq

    from pipeline.games.knucklebones import exact, gpu, stream
    from pipeline.games.knucklebones.game import KnuckleRules
    from pipeline.games.registry import Variant
    from pipeline.stages import streamed as streamed_build

    found: dict = {"simulated": gpu.simulated()}
    tol = 1e-8
    for cols, rows, faces, objective, dtype, t in (
        (2, 2, 2, "wins", np.float64, tol),
        (2, 2, 3, "score", np.float64, tol),
        (2, 2, 3, "wins", np.float32, gpu.FLOAT32_TOLERANCE),
    ):
        rules = KnuckleRules(cols, rows, faces, objective)
        g = gpu.solve(rules, tol=t, dtype=dtype)
        c = exact.solve(rules, tol=t, threads=1)
        found[f"{cols}x{rows}-d{faces}-{objective}-{np.dtype(dtype).name}"] = {
            "states": g.n_states,
            "sweeps": g.sweeps,
            "bound": g.bound,
            "max_diff": float(np.abs(g.values(0, g.n_states) - c.value).max()),
            "tolerance": t,
        }
    # the lean table of the full game, on a small board: the same code path
    game = stream.StreamedKnucklebones(KnuckleRules(2, 2, 3, "wins"))
    stream.MAX_STREAM_STATES = 0
    via_build = stream.stream(game, ("states", "policy"), device="cuda")  # not consumed
    s = stream.lean_stream(game, rows=400)
    variant = Variant("kb-lean", "test", lambda: game, False, family="knucklebones", separate=True)
    staged, summary = streamed_build.write_streamed(variant, game, s, out_dir)
    (table,) = staged.values()
    path = Path(table.path)
    meta = pq.ParquetFile(path).metadata
    frame = pq.read_table(path)
    ids, value = frame["state_id"].to_numpy(), frame["value"].to_numpy()
    cpu = exact.solve(game.r, tol=1e-12, threads=1).value
    found["lean"] = {
        "tables": list(via_build.tables),
        "rows": int(meta.num_rows),
        "row_groups": int(meta.num_row_groups),
        "ranges": [
            [meta.row_group(i).column(1).statistics.min, meta.row_group(i).column(1).statistics.max]
            for i in range(meta.num_row_groups)
        ],
        "sorted": bool(ids[0] == 0 and (np.diff(ids) == 1).all()),
        "max_diff": float(np.abs(value - cpu).max()),
        "float32": bool((value.astype(np.float32) == value).all()),
        "tiles_null": frame["tiles"].null_count == frame.num_rows,
        "residual": float(frame["residual"][0].as_py()),
        "start_value": summary["start_value"],
        "start_cpu": float(cpu[0]),
    }
    return found


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
