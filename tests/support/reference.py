"""An independent reference solver written straight from the rules, for cross-checks only.

Plain recursion over frozensets with itertools: it shares no code with pipeline's graph builder
or solvers, so agreement between the two is evidence that both read the rules the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import cache
from itertools import combinations, product

Tiles = frozenset[int]


def dice_totals(dice: int, sides: int = 6) -> dict[int, Fraction]:
    """P(total) for ``dice`` fair dice, by enumerating every outcome."""
    out: dict[int, Fraction] = {}
    outcomes = list(product(range(1, sides + 1), repeat=dice))
    for faces in outcomes:
        out[sum(faces)] = out.get(sum(faces), Fraction(0)) + Fraction(1, len(outcomes))
    return out


def moves(open_tiles: Tiles, roll: int, cap: int | None = None) -> list[Tiles]:
    """Every set of open tiles summing to ``roll`` (at most ``cap`` tiles)."""
    limit = cap or len(open_tiles)
    return [
        frozenset(c)
        for k in range(1, limit + 1)
        for c in combinations(sorted(open_tiles), k)
        if sum(c) == roll
    ]


def solver(
    stuck_value: Callable[[Tiles], Fraction],
    dice_options: Callable[[Tiles], list[int]],
    maximise: bool = True,
    cap: int | None = None,
) -> Callable[[Tiles], Fraction]:
    """V(open tiles) for one-player Shut the Box with the given ending value and dice rule."""
    best = max if maximise else min

    @cache
    def value(open_tiles: Tiles) -> Fraction:
        if not open_tiles:
            return stuck_value(open_tiles)
        by_dice = []
        for d in dice_options(open_tiles):
            total = Fraction(0)
            for roll, p in dice_totals(d).items():
                options = moves(open_tiles, roll, cap)
                q = (
                    best(value(open_tiles - m) for m in options)
                    if options
                    else stuck_value(open_tiles)
                )
                total += p * q
            by_dice.append(total)
        return best(by_dice)

    return value


def shut(open_tiles: Tiles) -> Fraction:
    """1 when the box is shut, else 0."""
    return Fraction(int(not open_tiles))


def open_sum(open_tiles: Tiles) -> Fraction:
    """Final score: the sum of the open tiles."""
    return Fraction(sum(open_tiles))
