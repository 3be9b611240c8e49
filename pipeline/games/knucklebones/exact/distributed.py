"""The Knucklebones value iteration of :mod:`~pipeline.games.knucklebones.exact.cpu`, on Dask.

Why Dask.distributed (not Ray): it is pure Python and a small install (``pip install
'stb-pipeline[distributed]'``), a ``LocalCluster`` of worker processes runs on this 2-core
machine with nothing else, and the same code joins any running scheduler by its address
(``dask scheduler`` plus ``dask worker ADDRESS`` on each machine). It is an optional extra:
importing this module never needs Dask; :func:`solve_distributed` says how to install it.

Shards and sweeps. Positions are split by canonical-id range into shards. Sweep ``k`` is a wave
of one task per shard; task ``(k, i)`` reads the bounds every shard had after sweep ``k - 1``
(memory-mapped ``.npy`` files: only the pages its successors touch are read), updates shard
``i`` in place (Gauss-Seidel inside the shard, in the order of exact.py; one numba
thread per task, so the update is serial and bitwise reproducible) and writes it to
``sweep-k/shard-i.npy`` (temp file, then ``os.replace``). The shards are Jacobi against each
other. A task depends only on its arguments and on files no task rewrites with other bytes, so a
task retried after a lost worker writes the same bytes: the run is exact under retries, and with
the same shards it equals :func:`~pipeline.games.knucklebones.exact.cpu.solve` ``(shards=n,
threads=1)`` bit for bit. The engine moves only file names and two floats per task.

Checkpoints. After every sweep the client writes ``state.json`` (rules, shard bounds, sweep,
residual, bound; temp file then ``os.replace``) and only then deletes the previous sweep's
files, so the directory always holds one complete sweep; ``resume=True`` continues from it. On
a cluster of several machines the checkpoint directory must be on a filesystem every worker
mounts (NFS, Lustre, ...): the shard files are also how the workers exchange values.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import numba
import numpy as np

from pipeline.errors import UsageError
from pipeline.games.knucklebones.exact.cpu import (
    DEFAULT_MAX_SWEEPS,
    DEFAULT_TOLERANCE,
    Progress,
    Shard,
    check_tolerance,
    init_shard,
    iterate,
    shard_bounds,
    sweep_shard,
    tables,
)
from pipeline.games.knucklebones.exact.solution import Solution, midpoint
from pipeline.games.knucklebones.game import KnuckleRules

INSTALL_HINT = "Dask is not installed: pip install 'stb-pipeline[distributed]'"
STATE_FILE = "state.json"
#: Default shards per worker thread (more shards: smaller retries and better balance).
SHARDS_PER_WORKER = 4
#: Default largest shard: 10 million positions, 160 MB of float64 bounds per task.
MAX_SHARD = 10_000_000


@dataclass(frozen=True)
class Plan:
    """What a run computes: the rules, the shard bounds and the storage type."""

    rules: KnuckleRules
    starts: tuple[int, ...]
    dtype: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data for state.json."""
        return {"rules": self.rules.to_dict(), "starts": list(self.starts), "dtype": self.dtype}


# -- files --------------------------------------------------------------------------------------


def shard_path(root: Path, sweep: int, shard: int) -> Path:
    """Where shard ``shard``'s bounds after sweep ``sweep`` live."""
    return root / f"sweep-{sweep:06d}" / f"shard-{shard:05d}.npy"


def _save_atomic(path: Path, array: np.ndarray) -> None:
    """Write an .npy file so that readers see the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")  # one per attempt
    with open(tmp, "wb") as fh:
        np.save(fh, array)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _write_state(root: Path, state: dict[str, Any]) -> None:
    """Write state.json atomically (temp file, then os.replace)."""
    tmp = root / f"{STATE_FILE}.{uuid.uuid4().hex}.tmp"
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, root / STATE_FILE)


def read_state(root: Path) -> dict[str, Any] | None:
    """The last completed sweep's record, or None when there is none."""
    path = Path(root) / STATE_FILE
    return json.loads(path.read_text()) if path.exists() else None


# -- tasks (pure: the output depends only on the arguments and on complete files) ---------------


@lru_cache(maxsize=4)
def _cached_order(rules: KnuckleRules, lo: int, hi: int) -> Shard:
    """A shard's sweep order (kept by the worker between sweeps; its values are ignored)."""
    return init_shard(tables(rules), lo, hi, np.float32)


def init_task(rules: KnuckleRules, lo: int, hi: int, dtype: str, path: str) -> str:
    """Write the starting bounds of ids lo..hi-1 (terminal values exact) to ``path``."""
    _save_atomic(Path(path), init_shard(tables(rules), lo, hi, np.dtype(dtype).type).values)
    return path


def sweep_task(
    rules: KnuckleRules, starts: tuple[int, ...], shard: int, inputs: list[str], output: str
) -> tuple[float, float]:
    """One sweep of one shard: read every shard's previous bounds from ``inputs``, write this
    shard's new ones to ``output``; returns (largest change, largest U - L)."""
    numba.set_num_threads(1)  # serial inside the task: the same bits on every retry
    lo, hi = starts[shard], starts[shard + 1]
    order = _cached_order(rules, lo, hi)
    previous = [np.asarray(np.load(p, mmap_mode="r")) for p in inputs]
    values = np.array(previous[shard])  # this shard's copy, updated in place
    work = Shard(lo, hi, values, order.order, order.level_starts, order.pairs)
    found = sweep_shard(tables(rules), work, previous, np.asarray(starts, dtype=np.int64))
    _save_atomic(Path(output), values)
    return found


# -- driver ---------------------------------------------------------------------------------------


def _client(workers: int, address: str | None) -> Any:
    """A Dask client: joined to ``address``, or on a new LocalCluster of ``workers`` processes."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    if address:
        return Client(address)
    if workers < 1:
        raise UsageError(f"workers must be at least 1, not {workers}")
    # One thread per worker process: each task runs numba serially (see the module docstring).
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True)
    return Client(cluster)


def _plan(
    client: Any, rules: KnuckleRules, shards: int | None, dtype: str, resume: Path | None
) -> Plan:
    """The shards: the checkpoint's when resuming, else ``shards``, else 4 per worker thread
    and at most MAX_SHARD positions each."""
    state = read_state(resume) if resume is not None else None
    if state is not None:
        return Plan(rules, tuple(state["plan"]["starts"]), dtype)
    n_states = tables(rules).n_states
    threads = sum(client.nthreads().values()) or 1
    n = shards or max(SHARDS_PER_WORKER * threads, -(-n_states // MAX_SHARD))
    return Plan(rules, tuple(int(x) for x in shard_bounds(n_states, min(n, n_states))), dtype)


def _start(client: Any, plan: Plan, root: Path, resume: bool) -> tuple[int, float, float]:
    """The sweep to continue from (after writing sweep 0 unless resuming), residual, bound."""
    state = read_state(root) if resume else None
    if state is not None:
        if state["plan"] != plan.to_dict():
            raise UsageError(f"{root}: the checkpoint is of another board, shards or dtype")
        if state["bound"] is None:  # stopped right after writing sweep 0
            return int(state["sweep"]), np.inf, np.inf
        return int(state["sweep"]), float(state["residual"]), float(state["bound"])
    starts = plan.starts
    paths = [str(shard_path(root, 0, i)) for i in range(len(starts) - 1)]
    futures = [
        client.submit(init_task, plan.rules, lo, hi, plan.dtype, p, pure=False, retries=2)
        for (lo, hi), p in zip(pairwise(starts), paths, strict=True)
    ]
    client.gather(futures)
    _write_state(root, {"plan": plan.to_dict(), "sweep": 0, "residual": None, "bound": None})
    return 0, np.inf, np.inf


def _sweep(client: Any, plan: Plan, root: Path, sweep: int) -> tuple[float, float]:
    """Run sweep ``sweep`` as one wave of tasks; returns (largest change, largest U - L)."""
    n = len(plan.starts) - 1
    inputs = [str(shard_path(root, sweep - 1, i)) for i in range(n)]
    run = uuid.uuid4().hex[:8]  # fresh keys: a resumed run must not reuse old results
    futures = [
        client.submit(
            sweep_task,
            plan.rules,
            plan.starts,
            i,
            inputs,
            str(shard_path(root, sweep, i)),
            key=f"kb-sweep-{sweep}-{i}-{run}",
            retries=3,
        )
        for i in range(n)
    ]
    found = client.gather(futures)
    return max(r for r, _ in found), max(w for _, w in found)


def _values(root: Path, sweep: int, shards: int) -> np.ndarray:
    """The midpoints of a completed sweep, in state id order."""
    return np.concatenate(
        [midpoint(np.load(shard_path(root, sweep, i), mmap_mode="r")) for i in range(shards)]
    )


def solve_distributed(
    rules: KnuckleRules,
    *,
    workers: int = 2,
    address: str | None = None,
    shards: int | None = None,
    checkpoint_dir: str | Path | None = None,
    resume: bool = False,
    tol: float = DEFAULT_TOLERANCE,
    max_sweeps: int = DEFAULT_MAX_SWEEPS,
    dtype: type = np.float64,
    progress: Progress | None = None,
) -> Solution:
    """Solve a Knucklebones board with one Dask task per shard and sweep.

    Starts a LocalCluster of ``workers`` processes, or joins the scheduler at ``address``
    ("host:port"; then ``checkpoint_dir`` is required and must be shared by every worker).
    ``shards`` defaults to 4 per worker thread (and at most 10 million positions each); a
    resumed run keeps the checkpoint's shards. Without ``checkpoint_dir`` a temporary directory is
    used and removed. ``resume`` continues from the checkpoint's last complete sweep.
    ``progress(sweep, residual, bound, positions/s)`` after each sweep. Stops as
    :func:`pipeline.games.knucklebones.exact.cpu.solve` does; UsageError for bad input or without
    Dask.
    """
    check_tolerance(tol, max_sweeps)
    if address and checkpoint_dir is None:
        raise UsageError("--address needs --checkpoint-dir on a filesystem every worker reads")
    temporary = checkpoint_dir is None
    root = Path(tempfile.mkdtemp(prefix="kb-vi-") if checkpoint_dir is None else checkpoint_dir)
    root.mkdir(parents=True, exist_ok=True)
    client = _client(workers, address)
    try:
        plan = _plan(client, rules, shards, np.dtype(dtype).name, root if resume else None)
        t0 = time.perf_counter()
        n, n_states = len(plan.starts) - 1, plan.starts[-1]
        sweep, residual, width = _start(client, plan, root, resume)
        width = 2 * width if np.isfinite(width) else width  # state.json stores the bound

        def run(k: int) -> tuple[float, float]:
            residual, width = _sweep(client, plan, root, k)
            state = {"plan": plan.to_dict(), "sweep": k, "residual": residual, "bound": width / 2}
            _write_state(root, state)
            shutil.rmtree(root / f"sweep-{k - 1:06d}", ignore_errors=True)
            return residual, width

        sweep, residual, width, swept = iterate(
            run, n_states, tol, max_sweeps, progress, (sweep, residual, width)
        )
        value = _values(root, sweep, n)
        return Solution.of(
            plan.rules, value, "dask", np.dtype(plan.dtype).type, width / 2, residual, sweep,
            time.perf_counter() - t0, swept,
        )  # fmt: skip
    finally:
        cluster = None if address else client.cluster
        client.close()
        if cluster is not None:
            cluster.close()
        if temporary:
            shutil.rmtree(root, ignore_errors=True)
