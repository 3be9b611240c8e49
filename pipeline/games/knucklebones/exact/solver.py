"""One entry point for the exact Knucklebones solve: it picks where the sweeps run once (this
process's cores, Dask workers, or one GPU) and returns one :class:`Solution` whatever ran.

The three solvers prove the same thing (every value within ``tol`` of the exact one, by two-sided
bounds; :mod:`pipeline.games.knucklebones.exact.cpu`) on the same state ids:

- ``cpu``: :func:`pipeline.games.knucklebones.exact.cpu.solve`, every core of this process;
- ``dask``: :func:`pipeline.games.knucklebones.exact.distributed.solve_distributed`, chosen by
  giving ``workers`` (a local cluster) or ``address`` (a running scheduler), with checkpoints;
- ``cuda``: :func:`pipeline.games.knucklebones.exact.gpu.solve`, one NVIDIA GPU (numba-cuda).

Each backend is imported only when chosen: the CPU solve needs neither Dask nor numba-cuda.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipeline.errors import UsageError
from pipeline.games.knucklebones.exact.cpu import DEFAULT_MAX_SWEEPS, DEFAULT_TOLERANCE, Progress
from pipeline.games.knucklebones.exact.solution import Solution
from pipeline.games.knucklebones.game import KnuckleRules

#: The devices a user names (``--device``): Dask runs on CPUs, named by its workers instead.
DEVICES = ("cpu", "cuda")


def backend(
    device: str = "cpu",
    workers: int = 0,
    address: str | None = None,
    checkpoint_dir: str | Path | None = None,
    resume: bool = False,
) -> str:
    """Which solver runs (``cpu``, ``dask`` or ``cuda``) for these options; UsageError, before
    any work, for options that do not go together."""
    if device not in DEVICES:
        raise UsageError(f"--device must be one of {', '.join(DEVICES)}, not {device!r}")
    if workers < 0:
        raise UsageError(f"--workers must be 0 (this process) or more, not {workers}")
    distributed = workers > 0 or address is not None
    if device == "cuda" and distributed:
        raise UsageError("--device cuda runs in this process: leave out --workers and --address")
    if not distributed and (checkpoint_dir or resume):
        raise UsageError("--checkpoint-dir and --resume need --workers N or --address")
    if resume and not checkpoint_dir:
        raise UsageError("--resume needs --checkpoint-dir")
    return "cuda" if device == "cuda" else "dask" if distributed else "cpu"


def solve(
    rules: KnuckleRules,
    device: str = "cpu",
    *,
    tol: float = DEFAULT_TOLERANCE,
    max_sweeps: int = DEFAULT_MAX_SWEEPS,
    progress: Progress | None = None,
    dtype: type | None = None,
    threads: int | None = None,
    workers: int = 0,
    address: str | None = None,
    shards: int | None = None,
    checkpoint_dir: str | Path | None = None,
    resume: bool = False,
) -> Solution:
    """Solve ``rules``' board exactly, every value within ``tol``, where :func:`backend` says.

    ``progress(sweep, change, bound, positions per second)`` after each sweep. ``dtype``: the
    bounds' storage (None: float64, or on the GPU float32 where float64 does not fit).
    ``threads``: numba threads on the CPU, threads a block on the GPU. ``workers``,
    ``address``, ``shards``, ``checkpoint_dir`` and ``resume`` choose and steer a Dask run.
    UsageError (one line) for options that do not go together, a missing package or GPU, or
    when ``max_sweeps`` pass before the tolerance is met.
    """
    which = backend(device, workers, address, checkpoint_dir, resume)
    if which == "cuda":
        from pipeline.games.knucklebones.exact import gpu

        return gpu.solve(
            rules, tol=tol, max_sweeps=max_sweeps, progress=progress, dtype=dtype, threads=threads
        )
    if which == "dask":
        from pipeline.games.knucklebones.exact import distributed

        return distributed.solve_distributed(
            rules, workers=workers or 2, address=address, shards=shards,
            checkpoint_dir=checkpoint_dir, resume=resume, tol=tol, max_sweeps=max_sweeps,
            dtype=dtype or np.float64, progress=progress,
        )  # fmt: skip
    from pipeline.games.knucklebones.exact import cpu as exact

    return exact.solve(
        rules, tol=tol, max_sweeps=max_sweeps, dtype=dtype or np.float64, progress=progress,
        threads=threads,
    )  # fmt: skip
