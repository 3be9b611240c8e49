"""Custom N-player rule sets: from the command-line rule options (``--players 3 --tiles 8 ...``,
read through :mod:`pipeline.games.rule_options`) or recorded by a build."""

from __future__ import annotations

from typing import Any

from pipeline.errors import UsageError
from pipeline.games.registry import Variant, check_custom_name
from pipeline.games.rule_options import options_of

#: Rule options that only the N-player game reads (the others are the one-player dice rules).
NPLAYER_OPTIONS = options_of("nplayer")
#: One-player rule options the N-player game has no use for (its objective is the payoff).
REFUSED = ("objective", "target")


def variant_from_options(given: dict[str, Any], name: str | None = None) -> Variant:
    """The custom N-player variant for the rule options given (one of :data:`NPLAYER_OPTIONS`
    among them).

    The dice options are checked as the one-player game checks them (the same messages), then
    the players and payoff.
    """
    from pipeline.games.nplayer.rules import NPlayerRules

    if "players" not in given:
        raise UsageError("--payoff and --shut-multiplier go with --players N")
    for key in REFUSED:
        if key in given:
            raise UsageError(
                f"--{key} is a one-player rule: with --players the payoff decides what a player "
                "maximises (--payoff share or stake)"
            )
    dice = {k: v for k, v in given.items() if k not in NPLAYER_OPTIONS}
    own = {k: given[k] for k in NPLAYER_OPTIONS if k in given}
    return custom_variant(NPlayerRules.make(**own, **dice), name)


def custom_variant(rules: Any, name: str | None = None) -> Variant:
    """A variant for an N-player rule set (named after its rules by default)."""
    label = name or rules.slug()
    check_custom_name(label)

    def make() -> Any:
        from pipeline.games.nplayer.game import NPlayer

        return NPlayer(rules)

    return Variant(
        label, "custom N-player rule set", make, False, family="nplayer", separate=True,
        players=rules.players, parser=lambda: rules.parse_state,
    )  # fmt: skip


def variant_from_rules(name: str, rules: dict[str, Any]) -> Variant:
    """A custom variant called ``name`` with rules recorded by a build (``to_dict``)."""
    from pipeline.games.nplayer.rules import NPlayerRules

    found = NPlayerRules.from_dict(rules)
    return custom_variant(found, None if name == found.slug() else name)
