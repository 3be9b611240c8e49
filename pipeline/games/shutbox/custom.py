"""Custom one-player rule sets: given as command-line options (``--tiles 12 --dice 3 ...``, read
through :mod:`pipeline.games.rule_options`), named by their rules, or recorded by a build."""

from __future__ import annotations

import re
from typing import Any

from pipeline.games.registry import Variant, check_custom_name
from pipeline.games.tiles import TileCodec

#: Custom boxes of this many tiles or more (8,192 states and up) are built without a graph and
#: stored in files of their own, so that a big custom build never rewrites the shared tables'
#: rows, nor they its. A box of n tiles has up to 3**n moves (a move is a state and a set of
#: its open tiles; twice that with an optional single die) and a graph build holds every one:
#: from 13 tiles on (1.6 million moves) its memory would follow the moves, not the states.
SEPARATE_TILES = 13


def variant_from_options(given: dict[str, Any], name: str | None = None) -> Variant:
    """The custom one-player variant of the rule options given (read by
    :func:`pipeline.games.rule_options.variant_from_options`)."""
    from pipeline.games.shutbox.rules import RuleSet  # loaded only when rules are given

    return custom_variant(RuleSet(**given), name)


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
    from pipeline.games.shutbox.rules import RuleSet  # (no numpy: a lookup reads such names)

    return custom_variant(RuleSet(**given))


def variant_from_rules(name: str, rules: dict[str, Any]) -> Variant:
    """A custom variant called ``name`` with rules recorded by a build (``RuleSet.to_dict``)."""
    from pipeline.games.shutbox.game import RuleSet

    fields = {k: v for k, v in rules.items() if k != "game"}
    fields["one_die_shut"] = tuple(fields.get("one_die_shut", ()))
    return custom_variant(RuleSet(**fields), None if name == RuleSet(**fields).slug() else name)
