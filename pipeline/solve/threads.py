"""A compiled loop on every core through Python threads, instead of numba's ``parallel=True``.

A kernel compiled with ``parallel=True`` (``prange``) takes about three times as long to compile
as the same loop compiled serially (its parfor passes and the gufunc they build: 2 s against
0.6 s for the policy pass of the rule search), and a person's first command pays that for every
such kernel it runs. A serial kernel compiled with ``nogil=True`` that takes a block of its range
(``lo``, ``hi``) runs on every core all the same when threads call it on the blocks, since it
releases the GIL: :func:`run_blocks`. The blocks are handed out as threads come free, so a slow
block does not hold the others up; each block's results land in the caller's arrays, so the
answer does not depend on the number of threads.

The number of threads is numba's (``NUMBA_NUM_THREADS``, or :func:`numba.set_num_threads` in
the calling thread), so a caller that asks numba for one thread gets one here too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

#: Blocks per thread: enough for the threads to even out uneven blocks, few enough that each
#: call's overhead (microseconds) stays small.
BLOCKS_PER_THREAD = 4


def threads() -> int:
    """Threads a kernel may use here: numba's thread count in the calling thread."""
    import numba

    return int(numba.get_num_threads())


def spans(n: int, parts: int) -> list[tuple[int, int]]:
    """``range(n)`` cut into at most ``parts`` contiguous, non-empty, near-equal blocks."""
    parts = max(1, min(parts, n))
    return [(n * i // parts, n * (i + 1) // parts) for i in range(parts) if n > 0]


def on_blocks(kernel: Callable[..., Any]) -> Callable[..., None]:
    """``kernel(lo, hi, *args)`` as a function of ``args`` alone, run on blocks of the rows of
    its first argument (:func:`run_blocks`): the kernel declares its parameters once, and its
    callers call it as they would call it whole."""

    @functools.wraps(kernel, updated=())
    def run(*args: Any) -> None:
        run_blocks(kernel, len(args[0]), *args)

    return run


def run_blocks(kernel: Callable[..., Any], n: int, *args: Any, blocks: int | None = None) -> None:
    """Call ``kernel(lo, hi, *args)`` for blocks ``[lo, hi)`` covering ``range(n)``, on
    :func:`threads` threads (in this thread when that is one). ``blocks``: how many (default
    :data:`BLOCKS_PER_THREAD` per thread). The kernel writes its results into ``args``."""
    workers = threads()
    cut = spans(n, blocks or workers * BLOCKS_PER_THREAD)
    if workers == 1 or len(cut) <= 1:
        for lo, hi in cut:
            kernel(lo, hi, *args)
        return
    with ThreadPoolExecutor(min(workers, len(cut)), thread_name_prefix="stb-kernel") as pool:
        for _ in pool.map(lambda span: kernel(span[0], span[1], *args), cut):
            pass  # re-raises a block's error
