"""A second independent solver of the N-player game, fast enough for nine tiles: floats, and of
the earlier scores only the lowest and which seats hold it.

tests/support/nplayer_reference.py keeps every earlier score, in exact fractions: right by
construction, but the nine-tile games have millions of (seat, tiles, scores) positions there.
With the share payoff only the lowest score so far and the seats holding it can still matter (a
seat above it can no longer win: a later player can only lower it or tie it), so this solver
memoises (seat, open tiles, lowest score, holders) and returns every seat's share, in floats.
It shares no code with ``pipeline`` nor with the exact reference; the rules are those of the
N-player family in docs/variants.md:

- players take turns in seat order; a turn rolls and shuts open tiles adding up to the roll
  until no set fits, and its score is the sum of the tiles left open;
- two dice, or one (forced) once the mover's open tiles add up to ``one_die_sum`` or less;
- shutting every tile wins at once; the last player wins at once when their open tiles already
  add up to less than every earlier score; otherwise the lowest score wins, ties share it;
- every player maximises their own share; ties (within 1e-12, relative) go to the move
  shutting the largest tile bitmask.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from itertools import product

#: Shares this close (relative) are a tie, as in the project's tie rule.
TIE = 1e-12

Shares = tuple[float, ...]


def turns_solver(
    players: int, tiles: int, one_die_sum: int = 0, sides: int = 6
) -> Callable[[int, int, int | None, int], Shares]:
    """``play(seat, open_mask, lowest, holders)``: every seat's expected share of the win with
    ``seat`` to roll (seats 1..players; bit ``t - 1`` of ``open_mask`` is tile ``t``),
    ``lowest`` the lowest earlier score (None for the first player) and ``holders`` the seats
    holding it (bit ``k - 1`` for seat ``k``)."""
    full = (1 << tiles) - 1
    total = [sum(t for t in range(1, tiles + 1) if m >> (t - 1) & 1) for m in range(full + 1)]

    def distribution(n_dice: int) -> list[tuple[int, float]]:
        ways: dict[int, int] = {}
        for faces in product(range(1, sides + 1), repeat=n_dice):
            ways[sum(faces)] = ways.get(sum(faces), 0) + 1
        return [(s, w / sides**n_dice) for s, w in sorted(ways.items())]

    rolls = {1: distribution(1), 2: distribution(2)}

    @cache
    def moves(mask: int, roll: int) -> list[int]:
        """The sets of open tiles adding up to ``roll``, as bitmasks, largest first."""
        out, sub = [], mask
        while sub:
            if total[sub] == roll:
                out.append(sub)
            sub = (sub - 1) & mask
        return sorted(out, reverse=True)

    def alone(seat: int) -> Shares:
        return tuple(1.0 if k == seat else 0.0 for k in range(1, players + 1))

    def shared(winners: int) -> Shares:
        n = bin(winners).count("1")
        return tuple(1.0 / n if winners >> (k - 1) & 1 else 0.0 for k in range(1, players + 1))

    @cache
    def play(seat: int, mask: int, lowest: int | None, holders: int) -> Shares:
        if mask == 0:
            return alone(seat)
        last = seat == players
        if last and lowest is not None and total[mask] < lowest:
            return alone(seat)  # below every earlier score already: nobody can catch up
        n_dice = 1 if total[mask] <= one_die_sum else 2
        out = [0.0] * players
        for roll, p in rolls[n_dice]:
            options = moves(mask, roll)
            if options:
                shares = [play(seat, mask ^ m, lowest, holders) for m in options]
                top = max(s[seat - 1] for s in shares)
                # the first within the tie tolerance is the largest bitmask (options are sorted)
                best = next(s for s in shares if s[seat - 1] >= top - TIE * max(1.0, abs(top)))
            else:
                score = total[mask]
                if lowest is None or score < lowest:
                    now = (score, 1 << (seat - 1))
                else:
                    now = (lowest, holders | (1 << (seat - 1)) if score == lowest else holders)
                best = shared(now[1]) if last else play(seat + 1, full, *now)
            for k in range(players):
                out[k] += p * best[k]
        return tuple(out)

    return play
