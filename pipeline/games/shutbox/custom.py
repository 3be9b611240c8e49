"""Custom one-player rule sets given as command-line options (``--tiles 12 --dice 3 ...``)."""

from __future__ import annotations

import re
from typing import Any

from pipeline.errors import UsageError
from pipeline.games.registry import Variant, check_custom_name
from pipeline.games.tiles import TileCodec

#: Options that describe a custom one-player rule set; the CLI adds them to commands (@with_rules).
CUSTOM_RULE_OPTIONS: dict[str, tuple[type, str]] = {
    "tiles": (int, "Custom rules: number of tiles (1..n)."),
    "dice": (int, "Custom rules: number of dice normally rolled."),
    "sides": (int, "Custom rules: sides of each die."),
    "one_die": (str, "Custom rules: one-die rule: never, forced or optional."),
    "one_die_sum": (int, "Custom rules: one die when the open tiles sum to at most this."),
    "one_die_shut": (str, "Custom rules: one die once these tiles are shut, e.g. 789."),
    "objective": (str, "Custom rules: shut (max P(shut)), score (min E[score]) or target."),
    "target": (int, "Custom rules: for objective target, maximise P(score <= target)."),
    "max_per_move": (int, "Custom rules: at most this many tiles shut per roll."),
    "scoring": (str, "Custom rules: sum (of open tiles) or digital (tiles read as a number)."),
    "players": (int, "Custom rules: players in turn, 2..6 (the N-player game; default one)."),
    "payoff": (str, "Custom rules, with --players: share (of the win) or stake (winnings)."),
    "shut_multiplier": (int, "Custom rules, with --payoff stake: stakes paid for a shut."),
    "name": (str, "Custom rules: the variant name to store them under."),
}


#: The options that make a custom rule set an N-player game (pipeline.games.nplayer).
NPLAYER_OPTIONS = ("players", "payoff", "shut_multiplier")

#: Custom boxes of this many tiles or more (8,192 states and up) are built without a graph and
#: stored in files of their own, so that a big custom build never rewrites the shared tables'
#: rows, nor they its. A box of n tiles has up to 3**n moves (a move is a state and a set of
#: its open tiles; twice that with an optional single die) and a graph build holds every one:
#: from 13 tiles on (1.6 million moves) its memory would follow the moves, not the states.
SEPARATE_TILES = 13

#: What a custom variant name may look like (it is written in tables and typed in --variant).
VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def rules_from_options(values: dict[str, Any]) -> Variant | None:
    """A custom variant from the rule options given, or None when none was given."""
    given = {k: v for k, v in values.items() if v is not None and k != "name"}
    name = values.get("name")
    if name is not None and not VARIANT_NAME.fullmatch(name):
        raise UsageError(
            f"--name {name!r}: use letters, digits, '.', '_' and '-' (not first), e.g. my-rules"
        )
    if not given:
        if values.get("name"):
            raise UsageError("--name needs rule options such as --tiles")
        return None
    if "one_die_shut" in given:
        text = str(given["one_die_shut"]).replace(",", " ")
        tokens = text.split() if " " in text.strip() else list(text.strip())
        if not tokens or not all(t.isdigit() and t.isascii() for t in tokens):
            raise UsageError(f"--one-die-shut {given['one_die_shut']!r}: give tiles, e.g. 789")
        if any(len(t) > 2 for t in tokens):  # a box holds at most 24 tiles
            raise UsageError(f"--one-die-shut {given['one_die_shut']!r}: give tiles, e.g. 789")
        shut = [int(t) for t in tokens]
        twice = sorted({t for t in shut if shut.count(t) > 1})
        if twice:
            raise UsageError(
                f"--one-die-shut {given['one_die_shut']!r}: tile {twice[0]} is named twice"
            )
        given["one_die_shut"] = tuple(shut)
    if "one_die" not in given and ("one_die_sum" in given or "one_die_shut" in given):
        given["one_die"] = "optional"
    if any(key in given for key in NPLAYER_OPTIONS):
        if "players" not in given:
            raise UsageError("--payoff and --shut-multiplier go with --players N")
        from pipeline.games.nplayer.custom import rules_from_values

        return rules_from_values(given, values.get("name"))
    from pipeline.games.shutbox.game import RuleSet  # numpy: only when rules are given

    return custom_variant(RuleSet(**given), values.get("name"))


def custom_variant(rules: Any, name: str | None = None) -> Variant:
    """A variant for a rule set given on the command line (named after its rules by default)."""
    label = name or rules.slug()
    check_custom_name(label)

    def make() -> Any:
        from pipeline.games.shutbox.game import ShutTheBox

        return ShutTheBox(rules)

    codec = TileCodec(rules.tiles)
    separate = rules.tiles >= SEPARATE_TILES
    return Variant(
        label, "custom rule set", make, False, family="shutbox", separate=separate, codec=codec
    )


#: A name that :meth:`RuleSet.slug` writes, read back (the objective may be left out: shut).
SLUG = re.compile(
    r"stb-(?P<tiles>\d+)t-(?P<dice>\d+)d(?P<sides>\d+)"
    r"(?:-1d(?P<one_die>never|forced|optional)"
    r"(?:-le(?P<one_die_sum>\d+))?(?:-shut(?P<one_die_shut>\d+(?:\.\d+)*))?)?"
    r"(?:-max(?P<max_per_move>\d+))?(?:-(?P<scoring>sum|digital))?"
    r"(?:-(?P<objective>shut|score|target)(?P<target>\d+)?)?"
)
#: RuleSet fields read as whole numbers.
INT_FIELDS = ("tiles", "dice", "sides", "one_die_sum", "max_per_move", "target")


def variant_from_name(name: str) -> Variant | None:
    """The custom variant a rule-set name stands for (``stb-12t-3d6-shut``), None for others.

    So the name `build` prints for ``--tiles 12 --dice 3`` is one every command accepts.
    """
    found = SLUG.fullmatch(name)
    if found is None:
        return None
    given: dict[str, Any] = {k: v for k, v in found.groupdict().items() if v is not None}
    for key in INT_FIELDS:
        if key in given:
            given[key] = int(given[key])
    if "one_die_shut" in given:
        given["one_die_shut"] = tuple(int(t) for t in given["one_die_shut"].split("."))
    from pipeline.games.shutbox.game import RuleSet  # numpy: only when such a name is used

    return custom_variant(RuleSet(**given))


def variant_from_rules(name: str, rules: dict[str, Any]) -> Variant:
    """A custom variant called ``name`` with rules recorded by a build (``RuleSet.to_dict``)."""
    from pipeline.games.shutbox.game import RuleSet

    fields = {k: v for k, v in rules.items() if k != "game"}
    fields["one_die_shut"] = tuple(fields.get("one_die_shut", ()))
    return custom_variant(RuleSet(**fields), None if name == RuleSet(**fields).slug() else name)
