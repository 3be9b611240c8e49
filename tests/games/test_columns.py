"""pipeline.games.columns: the column helpers every game's tables are made with."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipeline.games.columns import TABLE_SPAN, describe_distinct, distinct, labels

RNG = np.random.default_rng(11)


@pytest.mark.parametrize(
    "values",
    [
        RNG.integers(-1, 1 << 18, 50_000),  # move labels with passes (-1), as Double Shutter's
        RNG.integers(0, 5, 1000).astype(np.uint8),
        RNG.integers(-100, 100, 7).astype(np.int16),
        np.array([TABLE_SPAN * 8, 3, 3, -2]),  # too wide for the table: sorted
        np.array([5]),
        np.zeros(0, dtype=np.int64),
        RNG.random(200),  # floats: sorted
    ],
)
def test_distinct_equals_numpy_unique(values: np.ndarray) -> None:
    found, inverse = distinct(values)
    want_found, want_inverse = np.unique(values, return_inverse=True)
    assert np.array_equal(found, want_found)
    assert found.dtype == values.dtype
    assert inverse.dtype == np.int64
    assert np.array_equal(inverse, want_inverse.reshape(-1))
    assert np.array_equal(found[inverse], values)


def test_describe_distinct_describes_each_value_once() -> None:
    seen: list[int] = []

    def describe(found: np.ndarray) -> pl.Series:
        seen.append(found.shape[0])
        return pl.Series([f"label {v}" for v in found.tolist()])

    values = np.array([7, -1, 7, 3, 3, 7])
    out = describe_distinct(values, describe)
    assert seen == [3]
    assert out.to_list() == [f"label {v}" for v in values.tolist()]


def test_labels_gathers_names_by_code() -> None:
    out = labels("kind", ["move", "pass", "end"], np.array([2, 0, 0, 1]))
    assert out.name == "kind"
    assert out.to_list() == ["end", "move", "move", "pass"]
