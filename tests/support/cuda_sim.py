"""numba's CUDA simulator, made to wait without spinning.

The simulator runs each block's threads as Python threads while its manager polls them in a
busy loop (``BlockManager.run``: ``is_alive`` of every thread, again and again), which holds the
GIL for a share of the time the kernel's own threads need: with the four threads a block that
``gpu.launch_shape`` gives under the simulator, a simulated solve took 40 % less CPU with the
manager sleeping 50 µs before each look. Only the manager waits differently: each thread runs
the kernel as before, and a thread blocked in ``syncthreads`` is still released once all are.
"""

from __future__ import annotations

import time
from typing import Any

#: How long the manager sleeps before it looks at a thread (seconds).
POLL_SECONDS = 5e-5


def poll_gently() -> None:
    """Make the simulator's manager sleep between looks (call with ``NUMBA_ENABLE_CUDASIM=1``,
    before the first launch)."""
    from numba.cuda.simulator import kernel as simulated

    thread = simulated.BlockThread
    if getattr(thread.is_alive, "gentle", False):
        return
    alive = thread.is_alive

    def is_alive(self: Any) -> bool:
        time.sleep(POLL_SECONDS)  # lets the kernel's threads take the GIL
        return alive(self)

    is_alive.gentle = True  # type: ignore[attr-defined]
    thread.is_alive = is_alive  # type: ignore[method-assign]
