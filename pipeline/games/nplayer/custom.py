"""Custom N-player rule sets from the command-line rule options (``--players 3 --tiles 8 ...``)."""

from __future__ import annotations

from typing import Any

from pipeline.errors import UsageError
from pipeline.games.registry import Variant, check_custom_name

#: Rule options that only the N-player game reads.
NPLAYER_OPTIONS = ("players", "payoff", "shut_multiplier")
#: One-player rule options the N-player game has no use for (its objective is the payoff).
REFUSED = ("objective", "target")


def rules_from_values(given: dict[str, Any], name: str | None) -> Variant:
    """The custom N-player variant for the rule options given (``players`` among them).

    The dice options are checked as the one-player game checks them (the same messages), then
    the players and payoff.
    """
    from pipeline.games.nplayer.rules import NPlayerRules
    from pipeline.games.shutbox.rules import RuleSet

    for key in REFUSED:
        if key in given:
            raise UsageError(
                f"--{key} is a one-player rule: with --players the payoff decides what a player "
                "maximises (--payoff share or stake)"
            )
    dice_rules = {k: v for k, v in given.items() if k not in NPLAYER_OPTIONS}
    one = RuleSet(objective="score", **dice_rules)  # the one-player game's own checks
    rules = NPlayerRules(
        tiles=one.tiles,
        dice=one.dice,
        sides=one.sides,
        one_die=one.one_die,
        one_die_sum=one.one_die_sum,
        one_die_shut=one.one_die_shut,
        max_per_move=one.max_per_move,
        scoring=one.scoring,
        **{k: given[k] for k in NPLAYER_OPTIONS if k in given},
    )
    return custom_variant(rules, name)


def custom_variant(rules: Any, name: str | None = None) -> Variant:
    """A variant for an N-player rule set (named after its rules by default)."""
    label = name or rules.slug()
    check_custom_name(label)

    def make() -> Any:
        from pipeline.games.nplayer.game import NPlayer

        return NPlayer(rules)

    return Variant(
        label, "custom N-player rule set", make, False, family="nplayer", separate=True,
        players=rules.players,
    )  # fmt: skip


def variant_from_rules(name: str, rules: dict[str, Any]) -> Variant:
    """A custom variant called ``name`` with rules recorded by a build (``to_dict``)."""
    from pipeline.games.nplayer.rules import NPlayerRules

    found = NPlayerRules.from_dict(rules)
    return custom_variant(found, None if name == found.slug() else name)
