"""Building table columns from numpy arrays without a Python string per row."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

#: Integer ranges up to this wide (or four times the values' count) are indexed through a
#: table of the values present instead of being sorted.
TABLE_SPAN = 1 << 20


def labels(name: str, names: Sequence[str], code: np.ndarray) -> pl.Series:
    """String column ``name`` whose row i is ``names[code[i]]``.

    Building millions of strings from a numpy array goes through Python objects; gathering from
    a column of a few strings stays in polars, tens of times faster.
    """
    return pl.Series(name, list(names), dtype=pl.String).gather(code)


def distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values and each value's index among them (int64), as
    ``np.unique(values, return_inverse=True)`` gives. Integers of a small range, such as move
    labels and most strategy features, go through a table of the values present: linear time
    where sorting millions of rows would dominate the cost of describing them."""
    values = np.asarray(values)
    if values.dtype.kind in "iu" and values.size:
        low, high = int(values.min()), int(values.max())
        if high - low <= max(TABLE_SPAN, 4 * values.size):
            shifted = (values - low).astype(np.int64, copy=False)
            present = np.zeros(high - low + 1, dtype=np.int64)
            present[shifted] = 1
            index_of = np.cumsum(present) - 1
            found = np.flatnonzero(present).astype(values.dtype) + values.dtype.type(low)
            return found, index_of[shifted]
    found, inverse = np.unique(values, return_inverse=True)
    return found, inverse.astype(np.int64).reshape(-1)


def describe_distinct(values: np.ndarray, describe: Callable[[np.ndarray], pl.Series]) -> pl.Series:
    """``describe(values)`` computed once per distinct value and gathered: a few hundred move
    labels describe millions of rows."""
    found, inverse = distinct(values)
    return describe(found).gather(inverse)
