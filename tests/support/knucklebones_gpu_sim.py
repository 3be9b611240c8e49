"""The GPU solver under numba's CUDA simulator, against the CPU solver, in one process.

Run by tests/games/knucklebones/test_knucklebones_gpu.py as ``NUMBA_ENABLE_CUDASIM=1 python -m
tests.support.knucklebones_gpu_sim OUT_DIR`` (the simulator must be on before numba is
imported, so it runs in a process of its own); prints one JSON object of findings.

With tests/support/without on ``PYTHONPATH`` (as the test runs it) polars, duckdb and matplotlib
cannot be imported at first, as on a GPU machine (issue 31): the solves, ``knucklebones
solve-exact`` on each device, the full game's build path, ``check-tables`` and a lookup run so;
then DuckDB is let in for a query (a GPU session brings DuckDB, not polars), then polars too
for ``verify``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from tests.support.cuda_sim import poll_gently

#: What a GPU machine lacks (tests/support/without/sitecustomize.py refuses them).
HEAVY = ("polars", "duckdb", "_duckdb", "matplotlib")
#: The board `knucklebones solve-exact` runs on, on each device (28 positions: quick under the
#: simulator).
SOLVE_EXACT_BOARD = ("--columns", "2", "--rows", "1", "--faces", "2")


def heavy_loaded() -> list[str]:
    """The packages of :data:`HEAVY` imported in this process so far."""
    return sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))


def refused() -> bool:
    """Whether ``import polars`` fails here as on a machine without it."""
    try:
        import polars  # noqa: F401
    except ModuleNotFoundError:
        return True
    return False


def let_in(*names: str) -> None:
    """Let ``names`` be imported again (the finder of tests/support/without forgets them)."""
    for finder in sys.meta_path:
        if type(finder).__name__ == "_Without":
            finder.names -= set(names)  # type: ignore[attr-defined]


def main(out_dir: Path) -> dict:
    import pyarrow.parquet as pq

    from pipeline.games.knucklebones.exact import cpu as exact
    from pipeline.games.knucklebones.exact import gpu, stream
    from pipeline.games.knucklebones.game import KnuckleRules
    from tests.conftest import invoke

    found: dict = {"simulated": gpu.simulated(), "refused_at_start": refused()}
    for device in ("cpu", "cuda"):
        said = invoke(["knucklebones", "solve-exact", *SOLVE_EXACT_BOARD, "--device", device])
        found[f"solve_exact_{device}"] = [said.code, said.stdout + said.stderr]
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
    # the full game's build (`build --device cuda`, lean states tables, both objectives) on a
    # small board: the same code path from the command line to the committed files
    from pipeline.games.knucklebones.variants import knucklebones

    for objective, suffix in (("wins", ""), ("score", "-score")):
        knucklebones(f"kb-sim-2x2-d3{suffix}", "test", False, columns=2, rows=2, faces=3,
                     objective=objective)  # fmt: skip
    stream.MAX_STREAM_STATES = 0  # every board takes the full game's path
    data = out_dir / "data"
    args = ["build", "--variant", "kb-sim-2x2-d3", "--variant", "kb-sim-2x2-d3-score"]
    built = invoke([*args, "--device", "cuda", "-d", data])
    assert built.code == 0, built.stderr
    path = data / "variants" / "kb-sim-2x2-d3" / "states.parquet"
    meta = pq.ParquetFile(path).metadata
    frame = pq.read_table(path)
    ids, value = frame["state_id"].to_numpy(), frame["value"].to_numpy()
    cpu = exact.solve(KnuckleRules(2, 2, 3), tol=1e-12, threads=1).value
    checked = invoke(["knucklebones", "check-tables", "--columns", "2", "--rows", "2",
                      "--faces", "3", "--samples", "200", "-d", data])  # fmt: skip
    from pipeline.apps.knucklebones import position

    position.MAX_GRAPH_STATES = 0  # looked up a row group at a time, as the full game's are
    looked = invoke(["knucklebones", "solve", "1_/__", "2_/__", "3", "-v", "kb-sim-2x2-d3",
                     "-d", data])  # fmt: skip
    found["without"] = {
        "refused_at_end": refused(),
        "loaded": heavy_loaded(),
        "lookup": [looked.code, looked.stdout + looked.stderr],
    }
    let_in("duckdb", "_duckdb")  # a GPU session brings DuckDB for the queries, not polars
    first = invoke(["query", "knucklebones_first_player", "--format", "csv", "-d", data])
    found["without"]["query_loaded"] = heavy_loaded()
    let_in(*HEAVY)  # verify's contracts read polars frames
    # the build had no DuckDB, so it wrote no catalog: verify says so, and --fix writes it
    unfixed = invoke(["verify", "-d", data])
    verified = invoke(["verify", "--fix", "-d", data])
    found["without"]["catalog_before_fix"] = [unfixed.code, unfixed.stderr[-500:]]
    decisions = pq.read_table(data / "variants" / "kb-sim-2x2-d3" / "decisions.parquet")
    found["lean"] = {
        "files": sorted(p.name for p in (data / "variants").iterdir()),
        "tables": sorted(
            p.name
            for p in (data / "variants" / "kb-sim-2x2-d3").iterdir()
            if p.suffix == ".parquet"
        ),
        "verify": [verified.code, verified.stdout[-2000:] + verified.stderr[-2000:]],
        "decision_kinds": sorted(set(decisions["kind"].to_pylist())),
        "rows": int(meta.num_rows),
        "row_groups": int(meta.num_row_groups),
        "ranges": [
            [meta.row_group(i).column(1).statistics.min, meta.row_group(i).column(1).statistics.max]
            for i in range(meta.num_row_groups)
        ],
        "sorted": bool(ids[0] == 0 and (np.diff(ids) == 1).all()),
        "max_diff": float(np.abs(value - cpu).max()),
        "float32": bool((value.astype(np.float32) == value).all()),
        "columns": frame.column_names,
        "residual": float(frame["residual"][0].as_py()),
        "start_cpu": float(cpu[0]),
        "first_player": first.stdout,
        "check_tables": [checked.code, checked.stdout],
        "build_stdout": built.stdout,
        "data": str(data),
    }
    return found


if __name__ == "__main__":
    poll_gently()
    print(json.dumps(main(Path(sys.argv[1]))))
