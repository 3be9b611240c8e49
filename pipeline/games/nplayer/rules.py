"""The rules of the N-player game as data: the one-player dice rules every player shares (a
:class:`~pipeline.games.shutbox.rules.RuleSet`, which checks them), the players and the payoff.

Plain Python (no numpy), so that a lookup on built tables can check a user's seat, best score and
tie count without building the game.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import UsageError
from pipeline.games.dice import CheckedRules, choice_problem, range_problem
from pipeline.games.shutbox.rules import ONE_DIE_MODES, RuleSet

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


def course_rules(
    tiles: int = 9, dice: int = 2, sides: int = 6, one_die_sum: int | None = 6
) -> NPlayerRules:
    """The two-player rules of the course assignment's command line (``--tiles``, ``--dice``,
    ``--sides``, ``--one-die-sum``: a forced single die at that open sum or less, 0 never)."""
    return NPlayerRules.make(tiles=tiles, dice=dice, sides=sides, one_die_sum=one_die_sum)
