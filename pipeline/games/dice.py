"""Distributions of dice totals, exact."""

from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=64)
def total_counts(dice: int, sides: int) -> tuple[int, ...]:
    """Ways to roll each total 0..dice*sides with ``dice`` fair dice of ``sides`` sides."""
    counts = np.array([1], dtype=object)
    face = np.array([0] + [1] * sides, dtype=object)
    for _ in range(dice):
        counts = np.convolve(counts, face)
    return tuple(int(c) for c in counts)


def roll_distribution(dice: int, sides: int) -> list[tuple[int, int, int]]:
    """Possible totals as (total, ways, sides**dice), in increasing total."""
    counts = total_counts(dice, sides)
    denom = sides**dice
    return [(t, c, denom) for t, c in enumerate(counts) if c]
