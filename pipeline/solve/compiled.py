"""How the package's kernels are compiled (numba): one place, the same options for each.

A kernel is compiled at its first call, never on import, and kept on disk (``cache=True``: in
``__pycache__`` beside the module, or ``$NUMBA_CACHE_DIR``), so that only a person's first
command compiles it. It releases the GIL, so that threads run it side by side
(:mod:`pipeline.solve.threads`). And it runs without numba's reference counting (``_nrt``): a
kernel here neither allocates nor returns an array (its caller passes every array it reads,
fills or uses as scratch), so there is nothing to count, while a helper called once per state
with a dozen arrays would pay an atomic increment and decrement of each at every call (a fifth
of the streamed box solve's time: 3.55 s against 2.73 s for 22 tiles x 3 dice on one thread);
without it the kernels also compile quicker. A kernel that allocated would fail to compile,
saying that it needs the reference counting (and an allocation would compile numpy's allocator
for its type too, on a first run). Kernels write a row entry by entry, never ``a[i, :] = b``:
numba's slice assignment from an array brings in its shape-mismatch message, whose string
formatting compiles for seconds.

The kernels the commands use ship compiled with the package (:mod:`pipeline.solve.shipped`):
every module that defines a cached kernel imports this one, so that numba looks there first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

from pipeline.solve import shipped

# numba looks in the kernels shipped with the package before it compiles one (shipped.py)
shipped.install()

F = TypeVar("F", bound=Callable[..., Any])

#: The options of every kernel (see the module's docstring).
OPTIONS: dict[str, Any] = {"cache": True, "nogil": True, "_nrt": False}


def kernel(fn: F) -> F:
    """``fn`` compiled as a kernel (on its first call)."""
    return cast(F, numba.njit(**OPTIONS)(fn))


def inline_kernel(fn: F) -> F:
    """``fn`` compiled as a kernel and inlined into the kernels that call it: for a helper
    called once per state, which then compiles once, as part of its caller."""
    return cast(F, numba.njit(**OPTIONS, inline="always")(fn))
