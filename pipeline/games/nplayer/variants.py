"""The named N-player variants: the course's rules for two, three and four players, three players
always rolling two dice, and cananian's two-player stake game."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.games.nplayer import custom
from pipeline.games.registry import OPTION_READERS, RULE_READERS, Variant, register


def nplayer(name: str, description: str, separate: bool = True, **rules: Any) -> Variant:
    """Register an N-player variant with the given rule fields (:meth:`NPlayerRules.make`);
    stored in files of its own and built without a graph (:mod:`pipeline.games.nplayer.stream`)
    unless ``separate`` is False."""

    def make() -> Any:
        from pipeline.games.nplayer.game import NPlayer
        from pipeline.games.nplayer.rules import NPlayerRules

        return NPlayer(NPlayerRules.make(**rules))

    def parser() -> Callable[..., int]:
        from pipeline.games.nplayer.rules import NPlayerRules  # (no numpy: its game's reader)

        return NPlayerRules.make(**rules).parse_state

    # those stored on their own are built by name (as the big Knucklebones boards): `all` keeps
    # to the shared tables
    players = int(rules.get("players", 2))
    return register(
        Variant(
            name, description, make, in_all=not separate, family="nplayer", separate=separate,
            players=players, parser=parser,
        )
    )  # fmt: skip


COURSE = "9 tiles, one die (forced) once the mover's open tiles sum to 6 or less"
nplayer(
    "two-player",
    f"two players, {COURSE}; value = the mover's expected wins (the course assignment)",
    # in the shared tables, with edges: the course's verifier export reads them
    separate=False,
)
nplayer(
    "three-player",
    f"three players in turn, {COURSE}; value = the mover's expected share of the win",
    players=3,
)
nplayer(
    "four-player",
    f"four players in turn, {COURSE}; value = the mover's expected share of the win",
    players=4,
)
nplayer(
    "three-player-two-dice",
    "three players in turn, 9 tiles, always two dice; value = the mover's expected share of "
    "the win",
    players=3,
    one_die="never",
    one_die_sum=None,
)
nplayer(
    "two-player-stake",
    "two players for a stake (cananian): digital score, one die (forced) at 6 or less, lower "
    "score wins the stake, a shut wins double, a tie returns it; value = expected winnings",
    scoring="digital",
    payoff="stake",
)

# Custom N-player rule sets built under any name are named again from their recorded rules;
# the command line's rule options with --players are read here.
RULE_READERS["shut-the-box-n-player"] = custom.variant_from_rules
OPTION_READERS["nplayer"] = custom.variant_from_options
