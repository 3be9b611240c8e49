"""Exact Knucklebones values on one GPU: the exact solver's bounds, swept by numba-cuda kernels.

The method is :mod:`pipeline.games.knucklebones.exact.cpu`'s, on the same state ids: every position
holds a lower and an upper bound of its value, terminal positions are exact, live ones start at
the objective's extremes, and a sweep sets ``L <- T(U)``, ``U <- T(L)`` in place. The Bellman
operator is antitone, so every bound read -- old or new, whatever another thread is writing at
that moment -- is a valid bound, and every update keeps ``L <= V* <= U``. The run stops when
``max(U - L) <= 2 * tol`` and the midpoint is within ``tol`` of the exact value: the same proof
and the same stopping rule as the CPU solver. The rules of a move (unranking, successors,
ranking, final values, the update) are the functions of :mod:`pipeline.games.knucklebones.rules`,
compiled here as device functions: one copy of the rules for both targets.

The kernels follow the habits that paid off in a measured full-game sweep on an H100: the board's
columns and faces are closure constants (the scratch arrays are sized at compile time and stay in
registers), both bounds of a position are adjacent (one 16-byte read), a grid-stride loop visits
the ids from the last to the first (pairs are numbered by dice, so a placement's successor has a
higher id and is usually updated already in this sweep), positions whose bounds have met are
skipped before any unranking, and the largest change and gap are reduced per block in shared
memory and combined with one atomic per block. No sweep order, pair array or move list is
stored: memory is the bounds alone, 16 bytes a position in float64 (8 in float32).

float64 bounds where they fit in the GPU's free memory, else float32 (stored rounded to nearest,
so the tolerance must be at least :data:`FLOAT32_TOLERANCE`); a board too big for both is refused
before any work, in one line giving the bytes it needs. Without numba-cuda or without a GPU the
solver says so in one line (exit 2). Under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``,
set before numba is imported) the same kernels run on the CPU, slowly: tiny boards only, which is
how the tests check them against the CPU solver.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from pipeline.errors import UsageError
from pipeline.games.knucklebones.exact import cpu as exact
from pipeline.games.knucklebones.exact.solution import Solution
from pipeline.games.knucklebones.game import KnuckleRules

#: Threads per block (the simulator runs each thread as a Python thread: keep it small there).
#: ptxas gives the full game's sweep kernel 156 registers a thread (sm_90, no spills): an SM's
#: 65,536 registers then hold 3 blocks of 128 threads (12 warps) but only 1 block of 256 (8).
THREADS = 128
SIM_THREADS = 4
#: Blocks per streaming multiprocessor in a launch (a grid-stride loop covers the rest).
BLOCKS_PER_SM = 32
#: GPU memory kept free beside the bounds (the CUDA context, the kernels, the tables).
HEADROOM = 512 * 2**20
#: The smallest tolerance float32 bounds support (they are rounded to nearest, not outward).
FLOAT32_TOLERANCE = 1e-6
INSTALL_HINT = "pip install '.[gpu]' (numba-cuda, numpy<2.5), or use --device cpu"


def simulated() -> bool:
    """Whether numba's CUDA simulator is on (it must be set before numba is imported)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def _has_numba_cuda() -> bool:
    """Whether the numba-cuda package is installed (a seam the tests replace)."""
    return importlib.util.find_spec("numba_cuda") is not None


def cuda_module() -> Any:
    """numba.cuda, once it is known to work here; UsageError (one line, exit 2) otherwise."""
    if not _has_numba_cuda():
        raise UsageError(f"--device cuda needs numba-cuda, which is not installed: {INSTALL_HINT}")
    try:
        from numba import cuda
    except Exception as e:  # an import that fails for any reason: say which
        raise UsageError(
            f"numba-cuda does not import ({e.__class__.__name__}): {INSTALL_HINT}"
        ) from None
    if not simulated():
        _check_compiler()
    if not _gpu_available(cuda):
        raise UsageError(
            "--device cuda found no CUDA GPU (or no NVIDIA driver) on this machine: "
            "run on a machine with one, or use --device cpu"
        )
    return cuda


def _check_compiler() -> None:
    """Load what numba-cuda loads at a kernel's first compile, so that a numpy it cannot work
    with is refused here in one line, not as an internal error at the first launch: seen on an
    H100 machine (2026-11-26), numba-cuda 0.30.4 imports under numpy 2.5 and then fails on
    ``np.row_stack``, which numpy 2.5 removed."""
    try:
        import numba.cuda.cudaimpl  # noqa: F401  (the kernels' implementations)
    except (AttributeError, ImportError) as e:
        raise UsageError(
            f"numba-cuda cannot compile kernels with numpy {np.__version__} "
            f"({e.__class__.__name__}: {e}): pip install 'numpy<2.5' (the [gpu] extra pins it)"
        ) from None


def _gpu_available(cuda: Any) -> bool:
    """Whether a GPU (or the simulator) can run kernels (a seam the tests replace)."""
    try:
        return bool(cuda.is_available())
    except Exception:  # a broken driver is "no GPU" to the user
        return False


def free_memory(cuda: Any) -> float:
    """Free bytes on the current GPU (infinite under the simulator; a seam the tests replace)."""
    ctx = cuda.current_context()
    pending = getattr(ctx, "deallocations", None)
    if pending is not None:  # numba frees device arrays lazily: count a dropped solve as free
        pending.clear()
    free, _total = ctx.get_memory_info()
    return float(free)


def bytes_needed(n_states: int, dtype: type) -> int:
    """GPU memory for the bounds of ``n_states`` positions in ``dtype``, plus the headroom."""
    return 2 * np.dtype(dtype).itemsize * n_states + HEADROOM


def pick_dtype(n_states: int, tol: float, free: float) -> type:
    """float64 if its bounds fit in ``free`` bytes, else float32 (UsageError if the tolerance is
    below :data:`FLOAT32_TOLERANCE` then); UsageError, before any work, if neither fits."""
    if bytes_needed(n_states, np.float64) <= free:
        return np.float64
    need32 = bytes_needed(n_states, np.float32)
    if need32 > free:
        raise UsageError(
            f"the GPU has {free / 1e9:.1f} GB free; {n_states:,} positions need "
            f"{bytes_needed(n_states, np.float64) / 1e9:.1f} GB of float64 bounds or "
            f"{need32 / 1e9:.1f} GB of float32: use a GPU with more memory, or --device cpu "
            "(docs/knucklebones-full-game.md)"
        )
    if tol < FLOAT32_TOLERANCE:
        raise UsageError(
            f"float64 bounds need {bytes_needed(n_states, np.float64) / 1e9:.1f} GB and the "
            f"GPU has {free / 1e9:.1f} GB free; float32 bounds fit but hold values to "
            f"{FLOAT32_TOLERANCE:g}: pass --tolerance {FLOAT32_TOLERANCE:g}"
        )
    return np.float32


@lru_cache(maxsize=8)
def kernels(c: int, f: int, tpb: int) -> tuple[Any, Any]:
    """The (init, sweep) kernels of a board of ``c`` columns and an ``f``-faced die, launched
    with ``tpb`` threads a block (compiled on first use; see
    :mod:`pipeline.games.knucklebones.exact.gpu_kernels`)."""
    from pipeline.games.knucklebones.exact import gpu_kernels

    return gpu_kernels.make(c, f, tpb)


#: The pair tables a kernel reads (copied to the GPU once per solve).
TABLE_NAMES = ("binom", "moved", "swap", "mover_size", "opp_size", "mover_score", "opp_score")


def init_args(tb: exact.Tables, d: dict[str, Any], bounds: Any) -> tuple[Any, ...]:
    """The init kernel's arguments: ``d`` holds :data:`TABLE_NAMES` (device or host arrays)."""
    return (
        tb.n_states, tb.n_pairs, tb.slots, d["binom"], d["mover_size"], d["opp_size"],
        d["mover_score"], d["opp_score"], tb.wins, tb.low, tb.high, bounds,
    )  # fmt: skip


def sweep_args(tb: exact.Tables, d: dict[str, Any], bounds: Any, out: Any) -> tuple[Any, ...]:
    """The sweep kernel's arguments (``out``: the largest change and gap, two float64)."""
    return (tb.n_states, tb.n_pairs, d["moved"], d["swap"], d["binom"], tb.offset, bounds, out)


def greedy_args(tb: exact.Tables, d: dict[str, Any], bounds: Any, out: Any) -> tuple[Any, ...]:
    """Greedy's best-response sweep's arguments (its bounds: each position with either player
    to move), the sweep's and both players' scores."""
    return (
        tb.n_states, tb.n_pairs, d["moved"], d["swap"], d["binom"], d["mover_score"],
        d["opp_score"], tb.offset, bounds, out,
    )  # fmt: skip


@dataclass
class Ptx:
    """The kernels of one board compiled to PTX without a GPU (:func:`compile_ptx`)."""

    init: str
    sweep: str


def compile_ptx(rules: KnuckleRules, dtype: type = np.float64, cc: tuple[int, int] = (9, 0)) -> Ptx:
    """Compile the board's two kernels to PTX for compute capability ``cc``, with the argument
    types of a real launch (those of :func:`init_args` and :func:`sweep_args`), on a machine
    without a GPU: numba-cuda's type inference and NVVM run as they would on the GPU's first
    launch, so a kernel that would not compile there fails here. Needs numba-cuda, NVVM and
    NVRTC (the ``nvidia-cuda-nvcc-cu12`` and ``nvidia-cuda-nvrtc-cu12`` wheels, in the ``[gpu]``
    and ``[test]`` extras), not a driver.

    numba-cuda asks the current device for its compute capability when it compiles a device
    function a kernel calls (the rules' njit functions), which needs a driver: for this compile
    only, that question is answered with ``cc``.
    """
    with _ptx_compiler(cc) as ptx:
        tb = exact.tables(rules)
        init, sweep = kernels(tb.columns, tb.faces, THREADS)
        host = {k: getattr(tb, k) for k in TABLE_NAMES}
        bounds: np.ndarray = np.zeros((1, 2), dtype=dtype)
        out = np.zeros(2, dtype=np.float64)
        init_ptx = ptx(init, init_args(tb, host, bounds))
        sweep_ptx = ptx(sweep, sweep_args(tb, host, bounds, out))
    return Ptx(init_ptx, sweep_ptx)


@contextmanager
def _ptx_compiler(cc: tuple[int, int]) -> Iterator[Callable[[Any, tuple[Any, ...]], str]]:
    """``ptx(kernel, args)``: the kernel compiled to PTX for compute capability ``cc`` with the
    types of ``args``, without a GPU (the checks, and the stand-in device, of
    :func:`compile_ptx`). UsageError under the simulator or without numba-cuda."""
    if simulated():
        raise UsageError("the CUDA simulator does not compile kernels: unset NUMBA_ENABLE_CUDASIM")
    if not _has_numba_cuda():
        raise UsageError(f"compiling the GPU kernels needs numba-cuda: {INSTALL_HINT}")
    import numba
    import numba.cuda.dispatcher as dispatcher
    from numba import cuda

    class _Device:
        compute_capability = cc

    def ptx(kernel: Any, args: tuple[Any, ...]) -> str:
        text, _ = cuda.compile_ptx(kernel.py_func, tuple(numba.typeof(a) for a in args), cc=cc)
        return str(text)

    asked = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _Device()
    try:
        yield ptx
    finally:
        dispatcher.get_current_device = asked


def launch_shape(cuda: Any, n: int, threads: int | None = None) -> tuple[int, int]:
    """(blocks, threads) of a grid-stride launch over ``n`` ids (``threads`` a block: default
    :data:`THREADS`; :data:`SIM_THREADS` under the simulator, whatever is asked)."""
    if simulated():
        return max(1, min(2, -(-n // SIM_THREADS))), SIM_THREADS
    threads = threads or THREADS
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    return max(1, min(sms * BLOCKS_PER_SM, -(-n // threads))), threads


def solve(
    rules: KnuckleRules,
    tol: float = exact.DEFAULT_TOLERANCE,
    max_sweeps: int = exact.DEFAULT_MAX_SWEEPS,
    progress: exact.Progress | None = None,
    dtype: type | None = None,
    threads: int | None = None,
) -> Solution:
    """Solve a Knucklebones board on the GPU (see the module docstring): the bounds stay on the
    GPU, read a range at a time (:meth:`Solution.values`).

    ``dtype`` None picks float64 where the bounds fit in the GPU's free memory, else float32.
    UsageError (one line) without numba-cuda, without a GPU, for a board too big for the GPU,
    or when ``max_sweeps`` pass before the tolerance is met. ``progress(sweep, change, bound,
    positions per second)`` after each sweep, as for the CPU solver. ``threads`` a block:
    default :data:`THREADS` (a power of two: the per-block reduction halves it).
    """
    if threads is not None and (threads < 1 or threads & (threads - 1) or threads > 1024):
        raise UsageError(f"threads per block must be a power of two up to 1024, not {threads}")
    exact.check_tolerance(tol, max_sweeps)
    cuda = cuda_module()
    tb = exact.tables(rules)
    n = tb.n_states
    dtype = _bounds_dtype(cuda, n, tol, dtype, "positions")
    t0 = time.perf_counter()
    blocks, threads = launch_shape(cuda, n, threads)
    init, sweep = kernels(tb.columns, tb.faces, threads)
    d = {k: cuda.to_device(getattr(tb, k)) for k in TABLE_NAMES}
    bounds = cuda.device_array((n, 2), dtype=dtype)
    out = cuda.device_array(2, dtype=np.float64)
    init[blocks, threads](*init_args(tb, d, bounds))
    args = sweep_args(tb, d, bounds, out)
    sweeps, residual, width, swept = exact.iterate(
        _sweeps(lambda: sweep[blocks, threads](*args), out), n, tol, max_sweeps, progress
    )
    return Solution.of(
        rules, bounds, "cuda", dtype, width / 2, residual, sweeps, time.perf_counter() - t0, swept,
        pick=lambda ids: gather(bounds, ids),
    )  # fmt: skip


#: State ids a gather launch reads at most (their ids and values: 64 MB of GPU memory, within
#: :data:`HEADROOM`).
GATHER_CHUNK = 1 << 22


@lru_cache(maxsize=8)
def _made(maker: str, *args: int) -> Any:
    """The kernel ``gpu_kernels.<maker>(*args)`` makes (compiled on first use)."""
    from pipeline.games.knucklebones.exact import gpu_kernels

    return getattr(gpu_kernels, maker)(*args)


def gather(bounds: Any, ids: np.ndarray, chunk: int = GATHER_CHUNK) -> np.ndarray:
    """The values (the midpoints of the bounds, float64) of the state ids ``ids`` from a GPU
    solve's ``bounds`` (a device array [n, 2]), copied to the host ``chunk`` ids at a time:
    what :meth:`Solution.at` does for a solution left on the GPU."""
    cuda = cuda_module()
    kernel = _made("make_gather")
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    out = np.empty(ids.shape[0], dtype=np.float64)
    for a in range(0, ids.shape[0], chunk):
        part = ids[a : a + chunk]
        d_ids = cuda.to_device(part)
        d_out = cuda.device_array(part.shape[0], dtype=np.float64)
        blocks, threads = launch_shape(cuda, part.shape[0])
        kernel[blocks, threads](bounds, d_ids, d_out)
        out[a : a + part.shape[0]] = d_out.copy_to_host()
    return out


def _bounds_dtype(cuda: Any, n: int, tol: float, dtype: type | None, what: str) -> type:
    """The dtype of ``n`` bounds (``what``: their name in the error): :func:`pick_dtype`'s where
    None is asked; UsageError where the one asked does not fit or float32 misses ``tol``."""
    if dtype is None:
        dtype = pick_dtype(n, tol, free_memory(cuda))
    elif bytes_needed(n, dtype) > free_memory(cuda):
        raise UsageError(f"{n:,} {what} need {bytes_needed(n, dtype) / 1e9:.1f} GB on the GPU")
    if dtype == np.float32 and tol < FLOAT32_TOLERANCE:
        raise UsageError(f"float32 bounds need --tolerance {FLOAT32_TOLERANCE:g} or more")
    return dtype


def _sweeps(launch: Callable[[], None], out: Any) -> Callable[[int], tuple[float, float]]:
    """A sweep as :func:`exact.iterate` runs it: ``launch`` with ``out`` zeroed, then the
    sweep's largest change and width read back from ``out`` (which waits for the kernel)."""

    def sweep(_: int) -> tuple[float, float]:
        out.copy_to_device(np.zeros(2))
        launch()
        residual, width = (float(x) for x in out.copy_to_host())
        return residual, width

    return sweep


def greedy_solve(
    rules: KnuckleRules,
    tol: float = FLOAT32_TOLERANCE,
    max_sweeps: int = exact.DEFAULT_MAX_SWEEPS,
    seconds: float | None = None,
    progress: exact.Progress | None = None,
) -> Any:
    """Greedy play against its best response, on the GPU: the value of every position with
    each player to move (``2 n`` bounds: twice a solve's memory, so the full game's need
    float32 on an 80 GB GPU), proved within ``tol`` as the exact solver's (see
    :func:`pipeline.games.knucklebones.exact.gpu_kernels.make_greedy`).

    ``seconds``: stop after the sweep that passes this many seconds, the bounds then still
    valid but wider than ``tol`` (``converged`` False). Returns a
    :class:`pipeline.games.knucklebones.exact.greedy.GreedyValue` of the start position;
    ``progress(sweep, change, bound, positions per second)`` after each sweep. UsageError as
    :func:`solve`'s."""
    from pipeline.games.knucklebones.exact.greedy import GreedyValue

    exact.check_tolerance(tol, max_sweeps)
    cuda = cuda_module()
    tb = exact.tables(rules)
    n = tb.n_states
    dtype = _bounds_dtype(cuda, 2 * n, tol, None, "bounds")
    t0 = time.perf_counter()
    blocks, threads = launch_shape(cuda, 2 * n)
    init, _ = kernels(tb.columns, tb.faces, threads)
    sweep = _made("make_greedy", tb.columns, tb.faces, threads)
    d = {k: cuda.to_device(getattr(tb, k)) for k in TABLE_NAMES}
    bounds = cuda.device_array((2 * n, 2), dtype=dtype)
    out = cuda.device_array(2, dtype=np.float64)
    for half in (bounds[:n], bounds[n:]):  # a finished game's value, whoever is to move
        init[blocks, threads](*init_args(tb, d, half))
    args = greedy_args(tb, d, bounds, out)
    sweeps, _, width, swept = exact.iterate(
        _sweeps(lambda: sweep[blocks, threads](*args), out), 2 * n, tol, max_sweeps, progress,
        stop=True, deadline=None if seconds is None else t0 + seconds,
    )  # fmt: skip
    # the empty boards are state id 0: the perfect player's row, then greedy's
    perfect = bounds[0:1].copy_to_host()[0].astype(np.float64)
    greedy = bounds[n : n + 1].copy_to_host()[0].astype(np.float64)
    return GreedyValue(
        rules, (float(greedy[0]), float(greedy[1])), (float(perfect[0]), float(perfect[1])),
        tol, width <= 2 * tol, sweeps, time.perf_counter() - t0, swept, np.dtype(dtype).name,
        "cuda",
    )  # fmt: skip
