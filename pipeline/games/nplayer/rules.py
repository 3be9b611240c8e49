"""The rules of the N-player game as data: the one-player dice rules every player shares (a
:class:`~pipeline.games.shutbox.rules.RuleSet`, which checks them), the players and the payoff.

Plain Python (no numpy), so that a lookup on built tables can check a user's seat, best score and
tie count without building the game: a position as the user gives it is read here
(:meth:`NPlayerRules.parse_state`), by the game and by the console script's one-shot `expect`
(:mod:`pipeline.cli.lean`) alike.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import UsageError
from pipeline.games.dice import CheckedRules, choice_problem, range_problem, roll_distribution
from pipeline.games.shutbox.rules import (
    ONE,
    ONE_DIE_MODES,
    USUAL,
    RuleSet,
    dice_pattern,
    final_score,
)
from pipeline.games.tiles import parse_tiles

#: Entries of a payoff vector (see pipeline.games.nplayer.game): each earlier player holding the
#: best score, each earlier player beaten, then one per seat from FIRST_SEAT on.
HOLDER, BEATEN, FIRST_SEAT = 0, 1, 2

#: More tiles make 2**tiles masks for every (seat, best score, tie count): 12 tiles and four
#: players are already 1.9 million states.
MAX_TILES = 12
MIN_PLAYERS = 2
MAX_PLAYERS = 6
#: ``share``: each player's expected share of the win (a tie for the lowest score splits it);
#: ``stake``: each player's expected winnings, in stakes (every player stakes 1, the winners
#: share the pot, a player who shuts the box is paid ``shut_multiplier`` by every other player).
PAYOFFS = ("share", "stake")
#: Largest one-die open-sum limit accepted (any limit above the open sum of every tile is "always").
MAX_ONE_DIE_SUM = 1000
#: The dice rules every player's objective is read from: the final score (the payoff compares
#: the players' scores).
OBJECTIVE = "score"


def dice_rules(
    tiles: int = 9,
    dice: int = 2,
    sides: int = 6,
    one_die: str = "forced",
    one_die_sum: int | None = 6,
    one_die_shut: tuple[int, ...] = (),
    max_per_move: int | None = None,
    scoring: str = "sum",
) -> RuleSet:
    """The one-player rule set of the N-player game's dice rules, given as the N-player game
    reads them (the course's by default: a forced single die at an open sum of 6 or less).

    The N-player game reads a one-die limit of 0 or None as "no sum condition", and a one-die
    rule that has no condition left (or one die) as ``never``: the rule set holds what is in
    force. UsageError for a box of more than :data:`MAX_TILES` tiles or a limit outside 0..
    :data:`MAX_ONE_DIE_SUM`; the rule set checks the rest, with the one-player game's messages.
    """
    problems = _tiles_problem(tiles) + choice_problem("one-die rule", one_die, ONE_DIE_MODES)
    if one_die_sum is not None and one_die_sum < 0:
        problems.append(f"the one-die open-sum limit must be 0 or more, not {one_die_sum}")
    elif one_die_sum is not None and one_die_sum > MAX_ONE_DIE_SUM:
        # far above any open sum (78 for 12 tiles): a typo, or a number meant to overflow
        problems.append(
            f"the one-die open-sum limit must be at most {MAX_ONE_DIE_SUM}, not {one_die_sum}"
        )
    for problem in problems:
        raise UsageError(problem)
    limit = one_die_sum or None
    if dice == 1 or (one_die == "forced" and limit is None and not one_die_shut):
        one_die = "never"
    if one_die == "never":
        limit, one_die_shut = None, ()
    return RuleSet(
        tiles=tiles,
        dice=dice,
        sides=sides,
        one_die=one_die,
        one_die_sum=limit,
        one_die_shut=tuple(one_die_shut),
        objective=OBJECTIVE,
        max_per_move=max_per_move,
        scoring=scoring,
    )


def _tiles_problem(tiles: int) -> list[str]:
    """The N-player game's own limit on the box (the rule set allows bigger ones)."""
    if 1 <= tiles <= MAX_TILES:
        return []
    return [f"N-player tiles must be between 1 and {MAX_TILES}, not {tiles}"]


@dataclass(frozen=True)
class NPlayerRules(CheckedRules):
    """The rules of the N-player game: ``box``, the one-player dice rules every player plays by
    (objective: the score; see :func:`dice_rules`), ``players`` in turn, and the ``payoff``:
    ``share`` (the win, split at a tie) or ``stake`` (expected winnings in stakes; a shut is paid
    ``shut_multiplier`` stakes by everyone else). :meth:`make` builds them from the flat fields
    a build records (:meth:`to_dict`).
    """

    box: RuleSet = field(default_factory=dice_rules)
    players: int = 2
    payoff: str = "share"
    shut_multiplier: int = 2

    @classmethod
    def make(
        cls, players: int = 2, payoff: str = "share", shut_multiplier: int = 2, **dice: Any
    ) -> NPlayerRules:
        """The rules from flat fields: the players and payoff, and the dice rules as
        :func:`dice_rules` reads them (the course's by default)."""
        return cls(dice_rules(**dice), players, payoff, shut_multiplier)

    def problems(self) -> list[str]:
        """Every reason these rules are out of range beyond the dice rules' own (empty when
        valid)."""
        out: list[str] = []
        if not MIN_PLAYERS <= self.players <= MAX_PLAYERS:
            out.append(
                f"players must be between {MIN_PLAYERS} and {MAX_PLAYERS}, not {self.players} "
                "(one player: the one-player variants, without --players)"
            )
        out += _tiles_problem(self.box.tiles)
        if self.box.objective != OBJECTIVE:
            out.append(f"the N-player game's dice rules play for the {OBJECTIVE}")
        out += choice_problem("payoff", self.payoff, PAYOFFS)
        out += range_problem("shut multiplier", self.shut_multiplier, 1, 100)
        if self.payoff == "share" and self.shut_multiplier != 2:
            out.append("a shut multiplier goes with the stake payoff (--payoff stake)")
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for metadata and manifests: the players, the dice rules' fields (the
        objective apart: always the score) and the payoff."""
        box = self.box
        return {
            "game": "shut-the-box-n-player",
            "players": self.players,
            "tiles": box.tiles,
            "dice": box.dice,
            "sides": box.sides,
            "one_die": box.one_die,
            "one_die_sum": box.one_die_sum,
            "one_die_shut": list(box.one_die_shut),
            "max_per_move": box.max_per_move,
            "scoring": box.scoring,
            "payoff": self.payoff,
            "shut_multiplier": self.shut_multiplier,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NPlayerRules:
        """The rules :meth:`to_dict` wrote."""
        fields = {k: v for k, v in data.items() if k != "game"}
        fields["one_die_shut"] = tuple(fields.get("one_die_shut", ()))
        return cls.make(**fields)

    def slug(self) -> str:
        """A readable, deterministic variant name for a custom rule set."""
        box = self.box
        parts = [f"stb{self.players}p-{box.tiles}t-{box.dice}d{box.sides}", *box.slug_rules()]
        parts.append("share" if self.payoff == "share" else f"stake{self.shut_multiplier}")
        return "-".join(parts)

    # -- positions (the game's ids: see pipeline.games.nplayer.game) ---------------------------

    def possible_scores(self) -> tuple[int, ...]:
        """Sorted scores a turn can end with: scores of masks with a roll and no move."""
        return _possible_scores(self.box)

    def block_of(self, seat: int, best: int = 0, count: int = 1) -> int:
        """The id block of ``seat`` facing the best score ``best`` held by ``count`` players."""
        if seat == 1:
            return 0
        m = self.players - 1
        return (best * m + count - 1) * m + seat - 2

    def parse_state(self, text: str, **extra: Any) -> int:
        """State id of open tiles ("1245") for player ``player`` facing the best score
        ``best_score`` held by ``best_count`` players (two players: ``p1_score``)."""
        mask = parse_tiles(text, self.box.tiles)
        seat, best, count = self.check_position(
            extra.get("player"),
            extra.get("best_score"),
            extra.get("best_count"),
            extra.get("p1_score"),
        )
        return (self.block_of(seat, best, count) << self.box.tiles) + mask

    def check_position(
        self, player: int | None, best: int | None, count: int | None, p1_score: int | None
    ) -> tuple[int, int, int]:
        """(seat, best score, tie count) of a position as the user gives it; UsageError if it
        cannot happen."""
        n = self.players
        if p1_score is not None:
            if n != 2:
                raise UsageError(
                    f"--p1-score is for two players; with {n} give --player, --best-score "
                    "and --best-count"
                )
            if best is not None and best != p1_score:
                raise UsageError("give --p1-score or --best-score, not both")
            best = p1_score
            player = 2 if player is None else player
        seat = 1 if player is None else int(player)
        if not 1 <= seat <= n:
            raise UsageError(f"player {seat} is not a seat of this {n}-player game (1..{n})")
        if seat == 1:
            if best is not None or count is not None:
                raise UsageError("player 1 plays first: there is no best score yet")
            return 1, 0, 0
        if best is None:
            raise UsageError(f"player {seat} needs the best score so far (--best-score)")
        self.check_p1_score(int(best))
        count = 1 if count is None else int(count)
        if not 1 <= count <= seat - 1:
            raise UsageError(
                f"the best score cannot be shared by {count} players: player {seat} has "
                f"{seat - 1} before them"
            )
        return seat, int(best), count

    def check_p1_score(self, score: int) -> None:
        """UsageError unless an earlier player can finish a turn with ``score``."""
        who = "player 1" if self.players == 2 else "an earlier player"
        if score <= 0:
            what = "player 1's score" if self.players == 2 else "the best score so far"
            raise UsageError(
                f"{what} must be positive, not {score} (at 0 {who} has shut the box and won)"
            )
        possible = self.possible_scores()
        if score not in _possible_set(self.box):
            raise UsageError(
                f"{who} cannot finish a turn with score {score}; possible scores: "
                f"{ranges_text(list(possible))}"
            )


@functools.lru_cache(maxsize=16)
def _possible_scores(box: RuleSet) -> tuple[int, ...]:
    """:meth:`NPlayerRules.possible_scores` of the dice rules ``box``: worked out from subset
    sums and the box's scalar rules (:func:`dice_pattern`, :func:`final_score`) rather than
    from the graph, so that checking a user's best score needs no graph build (nor numpy)."""
    n_masks = 1 << box.tiles
    cap = box.max_per_move or box.tiles
    # makeable[m] bit k: some subset of m of at least one and at most `cap` tiles sums to k
    if cap >= box.tiles:  # any subset: the sums of m's subsets, its lowest tile added or not
        sums = [1] * n_masks
        for m in range(1, n_masks):
            low = m & -m
            sums[m] = sums[m ^ low] | (sums[m ^ low] << low.bit_length())
        makeable = [s & ~1 for s in sums]  # (bit 0: the empty set)
    else:  # the sums by size of subset
        sizes = [[1] + [0] * cap for _ in range(n_masks)]
        for m in range(1, n_masks):
            low = m & -m
            rest = sizes[m ^ low]
            bit = low.bit_length()
            sizes[m] = [rest[0]] + [rest[j] | (rest[j - 1] << bit) for j in range(1, cap + 1)]
        makeable = [functools.reduce(operator.or_, row[1:], 0) for row in sizes]
    rule = box.vector()
    rolls = {  # each number of dice's totals, as bits
        dice: sum(1 << t for t, _, _ in roll_distribution(dice, box.sides))
        for dice in ({box.dice} if box.one_die == "never" else {1, box.dice})
    }
    found = set()
    for m in range(1, n_masks):
        pattern = dice_pattern(m, rule)
        rolled = rolls[box.dice] if pattern & USUAL else 0
        if pattern & ONE and box.one_die != "never":
            rolled |= rolls[1]
        # (the same totals for two numbers of dice: stuck on either means stuck on the total)
        if rolled & ~makeable[m]:
            found.add(final_score(m, rule))
    return tuple(sorted(found))


@functools.lru_cache(maxsize=16)
def _possible_set(box: RuleSet) -> frozenset[int]:
    return frozenset(_possible_scores(box))


def ranges_text(values: list[int]) -> str:
    """Sorted integers as compact ranges: [1, 2, 3, 5] -> "1..3, 5"."""
    out: list[str] = []
    start = prev = None
    for v in [*values, None]:
        if v is not None and prev is not None and v == prev + 1:
            prev = v
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}..{prev}")
        start = prev = v
    return ", ".join(out)


def course_rules(
    tiles: int = 9, dice: int = 2, sides: int = 6, one_die_sum: int | None = 6
) -> NPlayerRules:
    """The two-player rules of the course assignment's command line (``--tiles``, ``--dice``,
    ``--sides``, ``--one-die-sum``: a forced single die at that open sum or less, 0 never)."""
    return NPlayerRules.make(tiles=tiles, dice=dice, sides=sides, one_die_sum=one_die_sum)
