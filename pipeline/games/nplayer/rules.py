"""The rules of the N-player game as data: players, the one-player dice rules, and the payoff.

Plain Python (no numpy), so that a lookup on built tables can check a user's seat, best score and
tie count without building the game.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.errors import UsageError
from pipeline.games.dice import choice_problem, dice_problems, range_problem

if TYPE_CHECKING:
    from pipeline.games.shutbox.rules import RuleSet

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
MAX_DICE = 8
MAX_SIDES = 20
ONE_DIE_MODES = ("never", "forced", "optional")
SCORINGS = ("sum", "digital")


@dataclass(frozen=True)
class NPlayerRules:
    """The rules of the N-player game.

    Tiles 1..``tiles``, ``dice`` dice of ``sides`` sides. ``one_die`` (never, forced, optional)
    says when a single die replaces them: when the mover's open tiles sum to ``one_die_sum`` or
    less (0 or None: no sum condition) and the ``one_die_shut`` tiles are shut, as in the
    one-player rule sets; the course's rules are a forced single die at 6 or less (the default).
    ``max_per_move`` caps the tiles shut per roll; ``scoring`` is ``sum`` or ``digital`` (the
    open tiles read as a number). ``payoff`` is ``share`` (the win, split at a tie) or ``stake``
    (expected winnings in stakes; a shut is paid ``shut_multiplier`` stakes by everyone else).
    """

    tiles: int = 9
    dice: int = 2
    sides: int = 6
    one_die_sum: int | None = 6
    players: int = 2
    one_die: str = "forced"
    one_die_shut: tuple[int, ...] = ()
    max_per_move: int | None = None
    scoring: str = "sum"
    payoff: str = "share"
    shut_multiplier: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "one_die_shut", tuple(sorted(set(self.one_die_shut))))
        for problem in self.problems():
            raise UsageError(problem)

    @property
    def one_die_mode(self) -> str:
        """The one-die rule in force: ``never`` when it has no condition or there is one die
        (a one-die limit of 0 is the course's "never")."""
        if self.dice == 1 or self.one_die == "never":
            return "never"
        if not self.one_die_sum and not self.one_die_shut and self.one_die == "forced":
            return "never"
        return self.one_die

    def problems(self) -> list[str]:
        """Every reason these rules are out of range (empty when valid)."""
        out: list[str] = []
        if not MIN_PLAYERS <= self.players <= MAX_PLAYERS:
            out.append(
                f"players must be between {MIN_PLAYERS} and {MAX_PLAYERS}, not {self.players} "
                "(one player: the one-player variants, without --players)"
            )
        if not 1 <= self.tiles <= MAX_TILES:
            out.append(f"N-player tiles must be between 1 and {MAX_TILES}, not {self.tiles}")
        out += dice_problems(self.dice, self.sides, MAX_DICE, MAX_SIDES)
        out += choice_problem("one-die rule", self.one_die, ONE_DIE_MODES)
        out += choice_problem("scoring", self.scoring, SCORINGS)
        out += choice_problem("payoff", self.payoff, PAYOFFS)
        if self.one_die_sum is not None and self.one_die_sum < 0:
            out.append(f"the one-die open-sum limit must be 0 or more, not {self.one_die_sum}")
        elif self.one_die_sum is not None and self.one_die_sum > MAX_ONE_DIE_SUM:
            # far above any open sum (78 for 12 tiles): a typo, or a number meant to overflow
            out.append(
                f"the one-die open-sum limit must be at most {MAX_ONE_DIE_SUM}, "
                f"not {self.one_die_sum}"
            )
        bad = [t for t in self.one_die_shut if not 1 <= t <= self.tiles]
        if bad:
            out.append(f"one-die tiles {bad} are not in a box of tiles 1..{self.tiles}")
        if self.max_per_move is not None and self.max_per_move < 1:
            out.append(f"at most {self.max_per_move} tiles per move would allow no move")
        if self.scoring == "digital" and self.tiles > 9:
            out.append("digital scoring reads tiles as digits, so it needs at most 9 tiles")
        out += range_problem("shut multiplier", self.shut_multiplier, 1, 100)
        if self.payoff == "share" and self.shut_multiplier != 2:
            out.append("a shut multiplier goes with the stake payoff (--payoff stake)")
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for metadata and manifests."""
        return {
            "game": "shut-the-box-n-player",
            "players": self.players,
            "tiles": self.tiles,
            "dice": self.dice,
            "sides": self.sides,
            "one_die": self.one_die,
            "one_die_sum": self.one_die_sum,
            "one_die_shut": list(self.one_die_shut),
            "max_per_move": self.max_per_move,
            "scoring": self.scoring,
            "payoff": self.payoff,
            "shut_multiplier": self.shut_multiplier,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NPlayerRules:
        """The rules :meth:`to_dict` wrote."""
        fields = {k: v for k, v in data.items() if k != "game"}
        fields["one_die_shut"] = tuple(fields.get("one_die_shut", ()))
        return cls(**fields)

    def slug(self) -> str:
        """A readable, deterministic variant name for a custom rule set."""
        parts = [f"stb{self.players}p-{self.tiles}t-{self.dice}d{self.sides}"]
        if self.one_die_mode != "never":
            cond = [f"le{self.one_die_sum}"] if self.one_die_sum else []
            if self.one_die_shut:
                cond.append("shut" + ".".join(str(t) for t in self.one_die_shut))
            parts.append(f"1d{self.one_die_mode}" + ("-" + "-".join(cond) if cond else ""))
        if self.max_per_move is not None:
            parts.append(f"max{self.max_per_move}")
        if self.scoring != "sum":
            parts.append(self.scoring)
        parts.append("share" if self.payoff == "share" else f"stake{self.shut_multiplier}")
        return "-".join(parts)

    def one_player(self) -> RuleSet:
        """The one-player rule set with the same tiles and dice (objective: the score): its graph
        gives every mask's rolls, moves and score, which every player shares."""
        from pipeline.games.shutbox.rules import RuleSet

        mode = self.one_die_mode
        return RuleSet(
            tiles=self.tiles,
            dice=self.dice,
            sides=self.sides,
            one_die=mode,
            one_die_sum=(self.one_die_sum or None) if mode != "never" else None,
            one_die_shut=self.one_die_shut if mode != "never" else (),
            objective="score",
            max_per_move=self.max_per_move,
            scoring=self.scoring,
        )


def course_rules(
    tiles: int = 9, dice: int = 2, sides: int = 6, one_die_sum: int | None = 6
) -> NPlayerRules:
    """The two-player rules of the course assignment's command line (``--tiles``, ``--dice``,
    ``--sides``, ``--one-die-sum``: a forced single die at that open sum or less, 0 never)."""
    return NPlayerRules(tiles=tiles, dice=dice, sides=sides, one_die_sum=one_die_sum)
