"""When two values count as a tie, and what a move loses: the one rule every solver, table,
answer and game shares.

Values within :data:`TIE_TOLERANCE` times ``max(1, |best|)`` of the best tie with it (the tie
rule then picks the largest move label, or the larger number of dice); a move's regret is what
it loses against the best, in the objective's direction, never negative.

The scalar functions are plain Python written in numba's subset, so that Python (the answers,
the teaching game) calls them as they are, with no compiler loaded, and the compiled kernels call
the same code through :mod:`pipeline.solve.ties`, which compiles them (``njit``). The array
functions are their numpy forms.
"""

from __future__ import annotations

import numpy as np

#: Relative tolerance: values within TIE_TOLERANCE * max(1, |best|) of the best tie with it.
TIE_TOLERANCE = 1e-12


def tie_tolerance(best: float) -> float:
    """Absolute tolerance under which a value ties with ``best`` (relative to its size)."""
    return TIE_TOLERANCE * max(1.0, abs(best))


def is_tie(value: float, best: float) -> bool:
    """Whether ``value`` ties with ``best`` under the tie rule."""
    return abs(value - best) <= TIE_TOLERANCE * max(1.0, abs(best))


def regret(best: float, value: float, maximise: bool) -> float:
    """What a move worth ``value`` loses against the best (``maximise`` False: the objective is
    minimised); never negative, and a plain 0.0 rather than -0.0 for the best move itself."""
    lost = best - value if maximise else value - best
    return lost if lost > 0.0 else 0.0


def tolerance(best: np.ndarray | float) -> np.ndarray:
    """:func:`tie_tolerance` of every entry of ``best``."""
    return TIE_TOLERANCE * np.maximum(1.0, np.abs(best))


def ties(values: np.ndarray, best: np.ndarray | float) -> np.ndarray:
    """:func:`is_tie` of every entry (``best`` broadcast against ``values``)."""
    return np.abs(values - best) <= tolerance(best)


def regrets(best: np.ndarray | float, values: np.ndarray, maximise: bool) -> np.ndarray:
    """:func:`regret` of every entry (``best`` broadcast against ``values``)."""
    lost = best - values if maximise else values - best
    return np.where(lost > 0.0, lost, 0.0)
