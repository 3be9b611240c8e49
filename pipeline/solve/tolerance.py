"""When two values count as a tie, which move the tie rule picks, and what a move loses: the
one rule every solver, table, answer and game shares.

Values within :data:`TIE_TOLERANCE` times ``max(1, |best|)`` of the best tie with it, and the
tie rule picks the largest label among them (a move's label, or the number of dice): that is
:func:`pick`, the one place the rule is written (and :func:`pick_two`, a search's: a second
objective breaks the first's ties, then the order of its moves); a move's regret is what it
loses against the best, in the objective's direction, never negative.

The scalar functions are plain Python written in numba's subset, so that Python (the answers,
the teaching game) calls them as they are, with no compiler loaded, and the compiled kernels call
the same code through :mod:`pipeline.solve.ties`, which compiles them (inlined into each kernel
that calls them, with :mod:`pipeline.solve.compiled`'s options): every solver loop and every
answer picks with :func:`pick`. The array functions are their numpy forms.
Nothing outside ``pipeline/solve/`` writes the tolerance's formula (a test holds it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Relative tolerance: values within TIE_TOLERANCE * max(1, |best|) of the best tie with it.
TIE_TOLERANCE = 1e-12


def is_tie(value: float, best: float) -> bool:
    """Whether ``value`` ties with ``best`` under the tie rule."""
    return abs(value - best) <= TIE_TOLERANCE * max(1.0, abs(best))


def best_of(values: Any, lo: int, hi: int, maximise: bool) -> float:
    """The best of ``values[lo:hi]`` in the objective's direction (NaN entries, no move, left
    out); NaN when there is none."""
    top = np.nan
    for k in range(lo, hi):
        v = values[k]
        if v == v and (top != top or (v > top if maximise else v < top)):
            top = v
    return top


def pick(values: Any, labels: Any, lo: int, hi: int, best: float) -> tuple[int, int]:
    """The tie rule: the index in ``lo..hi-1`` of the largest label among the ``values`` that
    tie with ``best`` (the first of equal labels), and how many tie; ``(-1, 0)`` when none does
    (a NaN value, no move, never ties). ``values`` and ``labels``: arrays or lists."""
    tol = TIE_TOLERANCE * max(1.0, abs(best))
    chosen = -1
    tied = 0
    for k in range(lo, hi):
        if abs(values[k] - best) <= tol:
            tied += 1
            if chosen < 0 or labels[k] > labels[chosen]:
                chosen = k
    return chosen, tied


def pick_two(first: Any, second: Any, lo: int, hi: int) -> tuple[int, int]:
    """The tie rule on two objectives, the first deciding: among the moves in ``lo..hi-1`` whose
    ``first`` value ties with the best, those whose ``second`` value ties with the best of
    theirs, and among them the first in the order given; with how many tie on both. ``(-1,
    0)`` when there is no move (NaN values are none). A search's values are estimates, which
    tie for a reason the estimate misses: its moves come in an order that says which to prefer
    (a Knucklebones search's, canonical: the emptiest facing pair first), where a table's
    exact ties are true ties and go to the largest label (:func:`pick`)."""
    top = np.nan
    for k in range(lo, hi):
        v = first[k]
        if v == v and (top != top or v > top):
            top = v
    tol = TIE_TOLERANCE * max(1.0, abs(top))
    then = np.nan
    for k in range(lo, hi):
        if abs(first[k] - top) <= tol and (then != then or second[k] > then):
            then = second[k]
    tol2 = TIE_TOLERANCE * max(1.0, abs(then))
    chosen = -1
    tied = 0
    for k in range(lo, hi):
        if abs(first[k] - top) <= tol and abs(second[k] - then) <= tol2:
            tied += 1
            if chosen < 0:
                chosen = k
    return chosen, tied


def regret(best: float, value: float, maximise: bool) -> float:
    """What a move worth ``value`` loses against the best (``maximise`` False: the objective is
    minimised); never negative, and a plain 0.0 rather than -0.0 for the best move itself."""
    lost = best - value if maximise else value - best
    return lost if lost > 0.0 else 0.0


def tolerance(best: np.ndarray | float) -> np.ndarray:
    """The absolute tolerance under which a value ties with each entry of ``best``."""
    return TIE_TOLERANCE * np.maximum(1.0, np.abs(best))


def ties(values: np.ndarray, best: np.ndarray | float) -> np.ndarray:
    """:func:`is_tie` of every entry (``best`` broadcast against ``values``)."""
    return np.abs(values - best) <= tolerance(best)


def picks(values: np.ndarray, labels: np.ndarray, best: np.ndarray) -> np.ndarray:
    """:func:`pick` of every row of ``values`` ([rows, moves], NaN where a row has fewer moves;
    ``labels`` of the same shape, ``best`` one per row): each row's index, -1 where none ties."""
    tied = ties(values, best[:, None])
    ranked = np.where(tied, labels, np.iinfo(np.int64).min)
    return np.where(tied.any(axis=1), ranked.argmax(axis=1), -1)


def regrets(best: np.ndarray | float, values: np.ndarray, maximise: bool) -> np.ndarray:
    """:func:`regret` of every entry (``best`` broadcast against ``values``)."""
    lost = best - values if maximise else values - best
    return np.where(lost > 0.0, lost, 0.0)
