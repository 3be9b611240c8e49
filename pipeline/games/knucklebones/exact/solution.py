"""The answer of an exact Knucklebones solve, whichever device ran it: every position's value
within a proven bound, and how the solve went
(:func:`pipeline.games.knucklebones.exact.solver.solve`).

The CPU and Dask solvers hold the values in host memory; the GPU solver leaves the bounds on the
GPU (the full game's are 77 GB) and copies a range of them to the host when asked. A
:class:`Solution` reads both the same way: :meth:`Solution.values` of an id range.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pipeline.games.knucklebones.game import KnuckleRules


def midpoint(bounds: np.ndarray) -> np.ndarray:
    """(lower + upper) / 2 of an [n, 2] bounds array, as float64."""
    return (bounds[:, 0].astype(np.float64) + bounds[:, 1]) / 2


@dataclass
class Solution:
    """The values of every canonical position of ``rules``' board (state id order), each
    within ``bound`` of the exact value, and how the solve reached them."""

    rules: KnuckleRules
    n_states: int
    bound: float
    """Every |value - exact value| <= bound (half the largest U - L)."""
    residual: float
    """The largest change of a bound in the last sweep."""
    sweeps: int
    seconds: float
    """The whole solve, start to finish."""
    sweep_seconds: float
    """The sweeps alone (on the GPU the first includes compiling the sweep kernel)."""
    backend: str
    """Where it ran: ``cpu`` (this process's cores), ``dask`` (Dask workers) or ``cuda``."""
    dtype: type
    """How the bounds were stored (float32 where float64 bounds did not fit a GPU)."""
    read: Callable[[int, int], np.ndarray]
    """The values of ids a..b-1 as float64 on the host (see :meth:`values`)."""
    on_device: bool = False
    """Whether the bounds are on the GPU (read: copied a range at a time)."""
    pick: Callable[[np.ndarray], np.ndarray] | None = None
    """The values of arbitrary ids as float64 on the host (see :meth:`at`; None: read the
    whole range)."""

    @classmethod
    def of(
        cls,
        rules: KnuckleRules,
        store: Any,
        backend: str,
        dtype: type,
        bound: float,
        residual: float,
        sweeps: int,
        seconds: float,
        sweep_seconds: float,
        pick: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> Solution:
        """A solution whose ``store`` is its values (float64, state id order) in host memory,
        or its bounds ([n, 2] lower, upper) left on the GPU (a device array: a range of values
        is copied to the host when read, and ``pick`` reads the values of given ids there)."""
        on_device = hasattr(store, "copy_to_host")
        read: Callable[[int, int], np.ndarray] = (
            (lambda a, b: midpoint(store[a:b].copy_to_host())) if on_device
            else (lambda a, b: store[a:b])
        )  # fmt: skip
        if pick is None and not on_device:

            def pick(ids: np.ndarray) -> np.ndarray:
                return np.asarray(store[ids], dtype=np.float64)

        return cls(
            rules, int(store.shape[0]), bound, residual, sweeps, seconds, sweep_seconds, backend,
            dtype, read, on_device, pick,
        )  # fmt: skip

    def host(self) -> Solution:
        """This solution with every value in host memory (a GPU's copied once: small boards;
        the others are returned as they are)."""
        if not self.on_device:
            return self
        held = self.values()
        return replace(
            self, read=lambda a, b: held[a:b], on_device=False, pick=lambda ids: held[ids]
        )

    def values(self, a: int = 0, b: int | None = None) -> np.ndarray:
        """The values of state ids ``a..b-1`` (default: every one), float64, on the host."""
        return self.read(a, self.n_states if b is None else b)

    @property
    def value(self) -> np.ndarray:
        """Every value, float64, on the host (from a GPU: the whole board copied; small boards
        only, the full game's is 38 GB: read ranges with :meth:`values`)."""
        return self.values()

    def at(self, ids: np.ndarray) -> np.ndarray:
        """The values of the state ids ``ids`` (any order, repeats allowed), float64, on the
        host: from a GPU, only those values are copied (a gather on the GPU), never the whole
        board."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= self.n_states):
            raise ValueError(f"state ids must be within 0..{self.n_states - 1}")
        if self.pick is None:
            return self.values()[ids]
        return self.pick(ids)

    def value_of(self, state_id: int) -> float:
        """The value of one position."""
        return float(self.read(state_id, state_id + 1)[0])
