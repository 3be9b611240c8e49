"""An independent, deliberately plain solver of the two-player game, for cross-checking.

It follows seed 002's rules by recursion over (open tiles, P1's score) with memoisation and shares
no code with `pipeline`: subsets, dice totals and values are all computed here from the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import cache
from itertools import product


def reference_solver(
    tiles: int = 9, dice: int = 2, sides: int = 6, one_die_sum: int = 6, exact: bool = False
) -> tuple[Callable[[int], object], Callable[[int, int], object]]:
    """(p1, p2): p1(mask) is P1's expected wins with P1 to roll; p2(mask, score) is P2's."""
    num = Fraction if exact else float
    half = num(1) / 2
    full = (1 << tiles) - 1

    def tile_sum(mask: int) -> int:
        return sum(t for t in range(1, tiles + 1) if mask >> (t - 1) & 1)

    def rolls(n_dice: int) -> list[tuple[int, object]]:
        ways: dict[int, int] = {}
        for faces in product(range(1, sides + 1), repeat=n_dice):
            ways[sum(faces)] = ways.get(sum(faces), 0) + 1
        return [(total, num(w) / sides**n_dice) for total, w in sorted(ways.items())]

    dist = {1: rolls(1), dice: rolls(dice)}

    @cache
    def moves(mask: int, roll: int) -> tuple[int, ...]:
        """Every subset of the open tiles summing to the roll."""
        sub, out = mask, []
        while sub:
            if tile_sum(sub) == roll:
                out.append(sub)
            sub = (sub - 1) & mask
        return tuple(out)

    def expected(mask: int, after: Callable[[int], object], stuck: object) -> object:
        total = tile_sum(mask)
        n_dice = 1 if total <= one_die_sum else dice
        value = num(0)
        for roll, prob in dist[n_dice]:
            options = moves(mask, roll)
            value += prob * (max(after(mask ^ m) for m in options) if options else stuck)
        return value

    @cache
    def p2(mask: int, score: int) -> object:
        total = tile_sum(mask)
        if total < score:
            return num(1)
        return expected(mask, lambda m: p2(m, score), half if total == score else num(0))

    @cache
    def p1(mask: int) -> object:
        if mask == 0:
            return num(1)
        return expected(mask, p1, 1 - p2(full, tile_sum(mask)))

    return p1, p2
