"""An independent, deliberately plain solver of the N-player game, for cross-checking.

It follows the rules of the N-player family (docs/variants.md) by recursion over (seat, open
tiles, the scores so far) with memoisation, in exact fractions, and shares no code with
`pipeline`: subsets, dice totals, scores and payoffs are all computed here from the rules. It
keeps *which* earlier players hold the best score (the tables keep only how many), and returns
every player's payoff by seat. Ties for the mover go to the move shutting the largest tile
bitmask, and between numbers of dice to the larger, as the project's tie rule says.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from itertools import product


def reference_solver(
    players: int,
    tiles: int,
    dice: int = 2,
    sides: int = 6,
    one_die_sum: int = 0,
    payoff: str = "share",
    multiplier: int = 2,
    digital: bool = False,
):
    """play(seat, mask, scores): every seat's payoff (a tuple of Fractions) with ``seat`` to
    roll from open tiles ``mask``, ``scores`` the earlier players' final scores (a tuple)."""
    full = (1 << tiles) - 1

    def score(mask: int) -> int:
        open_tiles = [t for t in range(1, tiles + 1) if mask >> (t - 1) & 1]
        if digital:
            return int("".join(map(str, open_tiles))) if open_tiles else 0
        return sum(open_tiles)

    def tile_sum(mask: int) -> int:
        return sum(t for t in range(1, tiles + 1) if mask >> (t - 1) & 1)

    def rolls(n_dice: int) -> list[tuple[int, Fraction]]:
        ways: dict[int, int] = {}
        for faces in product(range(1, sides + 1), repeat=n_dice):
            ways[sum(faces)] = ways.get(sum(faces), 0) + 1
        return [(total, Fraction(w, sides**n_dice)) for total, w in sorted(ways.items())]

    def moves(mask: int, roll: int) -> list[int]:
        out, sub = [], mask
        while sub:
            if tile_sum(sub) == roll:
                out.append(sub)
            sub = (sub - 1) & mask
        return sorted(out)

    def shut_payoff(seat: int) -> tuple[Fraction, ...]:
        if payoff == "share":
            return tuple(Fraction(int(k == seat)) for k in range(1, players + 1))
        return tuple(
            Fraction(multiplier * (players - 1)) if k == seat else Fraction(-multiplier)
            for k in range(1, players + 1)
        )

    def final(scores: tuple[int, ...]) -> tuple[Fraction, ...]:
        low = min(scores)
        winners = [k for k, s in enumerate(scores, start=1) if s == low]
        share = [
            Fraction(1, len(winners)) if k in winners else Fraction(0)
            for k in range(1, players + 1)
        ]
        if payoff == "share":
            return tuple(share)
        return tuple(players * s - 1 for s in share)

    @cache
    def play(seat: int, mask: int, scores: tuple[int, ...]) -> tuple[Fraction, ...]:
        if mask == 0:
            return shut_payoff(seat)
        if payoff == "share" and seat == players and scores and score(mask) < min(scores):
            return shut_payoff(seat)  # already below every score: the last player has won
        n_dice = 1 if dice > 1 and tile_sum(mask) <= one_die_sum else dice
        total = [Fraction(0)] * players
        for roll, prob in rolls(n_dice):
            options = moves(mask, roll)
            if options:
                best = None
                for m in options:  # increasing masks: a tie goes to the later (larger) one
                    value = play(seat, mask ^ m, scores)
                    if best is None or value[seat - 1] >= best[seat - 1]:
                        best = value
            else:
                done = (*scores, score(mask))
                best = final(done) if seat == players else play(seat + 1, full, done)
            for k in range(players):
                total[k] += prob * best[k]
        return tuple(total)

    return play
