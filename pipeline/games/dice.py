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


def dice_choices(one_die: str, dice: int, small: bool) -> list[int]:
    """The numbers of dice a player may roll, fewest first, under a one-die rule (``never``,
    ``forced`` or ``optional``) where ``small`` says the position meets its condition."""
    if one_die == "never":
        return [dice]
    if one_die == "forced":
        return [1] if small else [dice]
    return [1, dice] if small else [dice]


def chances(dice: list[int], sides: int) -> list[tuple[int, list[tuple[int, int, int]]]]:
    """Each number of dice with the totals it can roll, as (total, ways, denominator)."""
    return [(d, roll_distribution(d, sides)) for d in dice]


def range_problem(what: str, value: int, low: int, high: int) -> list[str]:
    """A one-line reason when ``value`` is outside ``low..high`` (empty when inside)."""
    return [] if low <= value <= high else [f"{what} must be between {low} and {high}, not {value}"]


def dice_problems(dice: int, sides: int, max_dice: int, max_sides: int) -> list[str]:
    """Reasons a number of dice and their sides are out of range (empty when valid)."""
    return range_problem("dice", dice, 1, max_dice) + range_problem(
        "dice sides", sides, 2, max_sides
    )


def choice_problem(what: str, value: str, allowed: tuple[str, ...]) -> list[str]:
    """A one-line reason when ``value`` is not one of ``allowed`` (empty when it is)."""
    return (
        [] if value in allowed else [f"{what} must be one of {', '.join(allowed)}, not {value!r}"]
    )
