"""The GPU exact Knucklebones solver against the CPU solver, in the same run (issue 23).

On a machine with a CUDA GPU and numba-cuda (``pip install '.[gpu]'``) it times
:func:`pipeline.games.knucklebones.exact.gpu.solve` on 3x2, 3x3 with a five-sided die and the full
game, and :func:`pipeline.games.knucklebones.exact.cpu.solve` (the CPU baseline, every core) on the
boards the CPU can hold (3x2; the others need 5.6 and 77 GB of bounds and hours). Each
measurement runs in a fresh child process that prints one JSON line (its peak host memory is its
own ``resource.getrusage`` maximum), and the GPU's values are compared with the CPU's on every
state where both ran. Without a GPU it says so, runs the smallest board (2x2 with a three-sided
die) on numba's CUDA simulator beside the CPU (a check, not a speed), and exits 0.

It first prints what the kernels cost before any run, GPU or not: each board's sweep kernel compiled
to PTX for an H100 (sm_90, :func:`pipeline.games.knucklebones.exact.gpu.compile_ptx`, no GPU needed)
and assembled by ptxas (from the nvidia-cuda-nvcc-cu12 wheel) for its registers a thread, spills and
resident warps an SM at the chosen threads a block.

Usage: python benchmarks/bench_knucklebones_gpu.py [BOARD ...] [--tolerance T] [--objective O]
                                                   [--threads N] [--json PATH]
       BOARD is CxR or CxRdF (default: 3x2 3x3d5 3x3)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench_knucklebones_vi import parse_board  # the boards are named the same way

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["3x2", "3x3d5", "3x3"]
#: Boards the CPU baseline is run on (3x3d5 needs 8 GB and about an hour on 2 cores).
CPU_MAX_STATES = 50_000_000


#: Registers an H100 SM holds, and its most resident warps.
SM_REGISTERS, SM_WARPS = 65_536, 64


def ptxas() -> str | None:
    """The ptxas of the nvidia-cuda-nvcc-cu12 wheel, or one on the PATH."""
    try:
        import nvidia.cuda_nvcc as nvcc  # type: ignore[import-not-found]

        found = Path(next(iter(nvcc.__path__))) / "bin" / "ptxas"
        if found.exists():
            return str(found)
    except ImportError:
        pass
    return shutil.which("ptxas")


def kernel_cost(board: str, objective: str, dtype: str, threads: int) -> dict:
    """The sweep kernel of ``board`` compiled for sm_90: registers, spills, resident warps."""
    import numpy as np

    from pipeline.games.knucklebones.exact import gpu

    ptx = gpu.compile_ptx(parse_board(board, objective), getattr(np, dtype), cc=(9, 0))
    tool = ptxas()
    if tool is None:
        return {"ptx_kb": len(ptx.sweep) / 1024}
    src = Path(f"/tmp/bench_kb_gpu_{board}_{dtype}.ptx")
    src.write_text(ptx.sweep)
    run = subprocess.run(
        [tool, "-arch=sm_90", "-v", str(src), "-o", os.devnull], capture_output=True, text=True
    )
    regs = int(re.search(r"Used (\d+) registers", run.stderr).group(1))  # type: ignore[union-attr]
    spill = sum(int(x) for x in re.findall(r"(\d+) bytes spill", run.stderr))
    per_warp = -(-regs * 32 // 256) * 256  # registers are allocated 256 at a time per warp
    blocks = SM_REGISTERS // (per_warp * (threads // 32))
    return {
        "ptx_kb": len(ptx.sweep) / 1024, "registers": regs, "spill_bytes": spill,
        "warps": min(SM_WARPS, blocks * threads // 32),
    }  # fmt: skip


def child(board: str, objective: str, device: str, tol: float, save: str, threads: int) -> dict:
    """Solve once in this process; the measurements as a dict (values saved to ``save``)."""
    import numpy as np

    from pipeline.games.knucklebones.exact import cpu as exact
    from pipeline.games.knucklebones.exact import solver

    rules = parse_board(board, objective)
    t0 = time.perf_counter()
    out: dict = {"positions": exact.tables(rules).n_states}
    sol = solver.solve(rules, device, tol=tol, threads=threads if device == "cuda" else None)
    out.update(sweeps=sol.sweeps, sweep_s=sol.sweep_seconds, start=sol.value_of(0))
    out["dtype"] = np.dtype(sol.dtype).name
    value = sol.values() if sol.n_states <= CPU_MAX_STATES else None
    out["seconds"] = time.perf_counter() - t0
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if save and value is not None:
        np.save(save, value)
    return out


def run_child(
    board: str, objective: str, device: str, tol: float, threads: int, sim: bool = False
) -> dict:
    """One measurement in a fresh process."""
    save = f"/tmp/bench_kb_gpu_{board}_{objective}_{device}.npy"
    # the checkout first, then what was there (packages carried to a GPU machine)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    if sim:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    args = [sys.executable, __file__, "--child", board, objective, device, str(tol), save]
    args.append(str(threads))
    run = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)
    if run.returncode != 0:
        return {"error": (run.stderr.strip().splitlines() or ["failed"])[-1]}
    found = json.loads(run.stdout.strip().splitlines()[-1])
    found["save"] = save
    return found


def gpu_present() -> bool:
    """Whether numba-cuda and a CUDA GPU are here (asked in a child: no simulator leaks in)."""
    code = "from numba import cuda; print(cuda.is_available())"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return run.returncode == 0 and run.stdout.strip() == "True"


def ptx_table(boards: list[str], objective: str, threads: int) -> None:
    """Print what ptxas makes of each board's sweep kernel for an H100 (no GPU needed)."""
    print(f"sweep kernels compiled for an H100 (sm_90), {threads} threads a block:")
    print("| board | bounds | PTX KB | registers a thread | spill bytes | resident warps an SM |")
    print("| --- | --- | --- | --- | --- | --- |")
    for board in boards:
        for dtype in ("float64", "float32"):
            try:
                k = kernel_cost(board, objective, dtype, threads)
            except Exception as e:  # no numba-cuda or no NVVM: the table says so and goes on
                print(f"| {board} | {dtype} | not compiled: {e.__class__.__name__}: {e} |")
                continue
            more = [str(k.get(x, "-")) for x in ("registers", "spill_bytes", "warps")]
            print(f"| {board} | {dtype} | {k['ptx_kb']:.0f} | " + " | ".join(more) + " |")
    print()


def main() -> None:
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("boards", nargs="*", default=DEFAULT)
    parser.add_argument("--tolerance", type=float, default=1e-11)
    parser.add_argument("--objective", default="wins")
    parser.add_argument("--threads", type=int, default=None, help="threads a block on the GPU")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--no-ptx", action="store_true",
                        help="skip the ptxas table (compiled here without a GPU; on a lent GPU "
                        "its compiles cost device time)")  # fmt: skip
    args = parser.parse_args()
    from pipeline.games.knucklebones.exact import gpu as gpu_solver

    threads = args.threads or gpu_solver.THREADS
    sim = not gpu_present()
    boards = args.boards
    if not args.no_ptx:
        ptx_table(boards, args.objective, threads)
    if sim:
        print("no CUDA GPU here (or no numba-cuda): running 2x2d3 on numba's CUDA simulator")
        print("beside the CPU, as a check of the kernels; its times say nothing about a GPU.")
        boards = ["2x2d3"]
    rows = []
    for board in boards:
        gpu = run_child(board, args.objective, "cuda", args.tolerance, threads, sim)
        cpu = None
        if "positions" in gpu and gpu["positions"] <= CPU_MAX_STATES:
            cpu = run_child(board, args.objective, "cpu", args.tolerance, threads)
        diff = None
        if cpu and "error" not in cpu and "error" not in gpu:
            a, b = np.load(gpu["save"]), np.load(cpu["save"])
            diff = float(np.abs(a - b).max())
        rows.append((board, gpu, cpu, diff))
    if args.json is not None:  # for benchmarks/gpu_session.py: GPU against CPU on every state
        found = [
            {"board": b, "gpu": g, "cpu": c, "max_diff": d, "tolerance": args.tolerance}
            for b, g, c, d in rows
        ]
        args.json.write_text(json.dumps({"simulated": sim, "rows": found}, indent=1))
    head = ["board", "positions", "GPU sweeps", "GPU sweep s", "GPU s", "bounds", "host peak MB",
            "CPU sweeps", "CPU s", "CPU peak MB", "ratio CPU/GPU", "max |GPU - CPU|",
            "start value"]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for board, g, c, diff in rows:
        if "error" in g:
            print(f"| {board} | GPU: {g['error']} |")
            continue
        cs = c["seconds"] if c and "error" not in c else None
        cells = [
            board, f"{g['positions']:,}", str(g["sweeps"]), f"{g['sweep_s']:.2f}",
            f"{g['seconds']:.1f}", g["dtype"], f"{g['peak_mb']:,.0f}",
            str(c["sweeps"]) if cs else "-", f"{cs:.1f}" if cs else "-",
            f"{c['peak_mb']:,.0f}" if cs else "-", f"{cs / g['seconds']:.1f}" if cs else "-",
            "-" if diff is None else f"{diff:.1e}",
            f"{g['start']:.10f}",
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        board, objective, device, tol, save, threads = sys.argv[2:8]
        print(json.dumps(child(board, objective, device, float(tol), save, int(threads))))
    else:
        main()
